/**
 * The parts of a GGUF file qm reads: header, metadata key/values and tensor infos.
 * Layout per the GGUF spec (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
 */

/** `gguf_metadata_value_type` from the spec. */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufTypeId = (typeof GgufType)[keyof typeof GgufType];

/** 64-bit integers come back as `number` when exact, else `bigint`. */
export type GgufScalar = number | bigint | boolean | string;

export interface GgufArray {
  kind: "array";
  itemType: number;
  length: number;
  /** null when the array was skipped unread (large, e.g. `tokenizer.ggml.tokens`). */
  items: GgufValue[] | null;
}

export type GgufValue = GgufScalar | GgufArray;

export interface TensorInfo {
  name: string;
  /** `ne[]`, fastest-varying first, as stored. */
  dims: number[];
  /** `ggml_type` id. */
  type: number;
  /** Offset of the data from the start of the tensor-data section. */
  offset: number;
  /** Bytes of data, from the ggml type's block size (ggml_nbytes). */
  bytes: number;
}

export interface GgufHeader {
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: TensorInfo[];
  /** `general.alignment`, default 32. */
  alignment: number;
  /** Absolute offset of the tensor-data section. */
  dataOffset: number;
  /** Bytes the tensor data needs after `dataOffset` (max offset + size). */
  dataBytes: number;
  fileSize: number;
}

/** What sizing needs: a header, or the merged parts of a split model. */
export interface GgufModel {
  metadata: ReadonlyMap<string, GgufValue>;
  tensors: readonly TensorInfo[];
}
