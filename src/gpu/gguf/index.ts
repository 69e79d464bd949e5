export { type ByteSource, bytesSource, fileSource } from "./byte-source.ts";
export {
  DEFAULT_CTX_CAP,
  defaultContext,
  estimateVramGb,
  kvBytesPerTokenByLayer,
  OVERHEAD_FIXED_BYTES,
  OVERHEAD_FRACTION,
  type SizeOptions,
  sizeModel,
  type VramEstimate,
} from "./estimate.ts";
export { GGML_TYPES, tensorSize } from "./ggml-types.ts";
export { type GgufRead, readGgufFile, readGgufHeader } from "./read-header.ts";
export { SCAN_HELP, type ScanIo, scanCommand } from "./scan.ts";
export { mergeSplit, parseSplitName, splitParts } from "./split.ts";
export type { GgufArray, GgufHeader, GgufModel, GgufValue, TensorInfo } from "./types.ts";
