/**
 * The NVIDIA driver's own library, `libcuda.so.1` (the CUDA driver API, which every box with the
 * NVIDIA driver has; no CUDA toolkit needed), through `bun:ffi`. It is opened by name when first
 * used, never at import, so the compiled binary starts on any box and only `--vram-mb` (and
 * `qm selftest gpu`) need the driver. The `_v2` entry points are the ones the CUDA headers have
 * mapped `cuCtxCreate`, `cuMemAlloc`, … to since CUDA 3.2 (64-bit device pointers); they are
 * still exported by current drivers.
 */
import { CString, dlopen, FFIType, type Pointer, ptr } from "bun:ffi";

const LIBRARY = "libcuda.so.1";

const SYMBOLS = {
  cuInit: { args: [FFIType.u32], returns: FFIType.i32 },
  cuDriverGetVersion: { args: [FFIType.ptr], returns: FFIType.i32 },
  cuDeviceGetCount: { args: [FFIType.ptr], returns: FFIType.i32 },
  cuDeviceGet: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  cuDeviceGetName: { args: [FFIType.ptr, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  cuDeviceTotalMem_v2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  cuCtxCreate_v2: { args: [FFIType.ptr, FFIType.u32, FFIType.i32], returns: FFIType.i32 },
  cuCtxDestroy_v2: { args: [FFIType.u64], returns: FFIType.i32 },
  cuMemAlloc_v2: { args: [FFIType.ptr, FFIType.u64], returns: FFIType.i32 },
  cuMemFree_v2: { args: [FFIType.u64], returns: FFIType.i32 },
  cuGetErrorName: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
} as const;

type Lib = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

let lib: Lib | null = null;

/** A failure of the driver library, its message naming the library and the call. */
export class CudaError extends Error {}

function load(): Lib {
  if (lib) return lib;
  try {
    lib = dlopen(LIBRARY, SYMBOLS).symbols;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new CudaError(
      `cannot load ${LIBRARY} (the NVIDIA driver library; is the driver installed?): ${why}`,
    );
  }
  check(lib.cuInit(0), "cuInit");
  return lib;
}

function check(code: number, call: string): void {
  if (code === 0) return;
  let name = `error ${code}`;
  try {
    const out = new BigUint64Array(1);
    if (lib?.cuGetErrorName(code, ptr(out)) === 0 && out[0]) {
      // cuGetErrorName points at a static string of the driver's.
      name = new CString(Number(out[0]) as Pointer).toString();
    }
  } catch {}
  throw new CudaError(`${LIBRARY}: ${call} failed: ${name}`);
}

export interface CudaDevice {
  index: number;
  name: string;
  totalMib: number;
}

/** The driver's version (e.g. 12080 → "12.8") and its devices. */
export function cudaInfo(): { version: string; devices: CudaDevice[] } {
  const cu = load();
  const v = new Int32Array(1);
  check(cu.cuDriverGetVersion(ptr(v)), "cuDriverGetVersion");
  const count = new Int32Array(1);
  check(cu.cuDeviceGetCount(ptr(count)), "cuDeviceGetCount");
  const devices: CudaDevice[] = [];
  for (let i = 0; i < count[0]!; i++) {
    const dev = new Int32Array(1);
    check(cu.cuDeviceGet(ptr(dev), i), "cuDeviceGet");
    const name = new Uint8Array(256);
    check(cu.cuDeviceGetName(ptr(name), name.length, dev[0]!), "cuDeviceGetName");
    const total = new BigUint64Array(1);
    check(cu.cuDeviceTotalMem_v2(ptr(total), dev[0]!), "cuDeviceTotalMem");
    const end = name.indexOf(0);
    devices.push({
      index: i,
      name: new TextDecoder().decode(name.subarray(0, end < 0 ? name.length : end)),
      totalMib: Number(total[0]! / 1048576n),
    });
  }
  return { version: `${Math.floor(v[0]! / 1000)}.${(v[0]! % 1000) / 10}`, devices };
}

/** Memory held on a device until `free()`; the process's exit frees it too (the driver does). */
export interface DeviceMemory {
  free(): void;
}

/**
 * Holds `mib` MiB of device `device` (an index among the devices CUDA_VISIBLE_DEVICES leaves
 * visible): a context of its own, and one allocation.
 */
export function holdDeviceMemory(mib: number, device: number): DeviceMemory {
  const cu = load();
  const dev = new Int32Array(1);
  check(cu.cuDeviceGet(ptr(dev), device), `cuDeviceGet(${device})`);
  const ctx = new BigUint64Array(1);
  check(cu.cuCtxCreate_v2(ptr(ctx), 0, dev[0]!), "cuCtxCreate");
  const dptr = new BigUint64Array(1);
  const code = cu.cuMemAlloc_v2(ptr(dptr), BigInt(mib) * 1048576n);
  if (code !== 0) {
    cu.cuCtxDestroy_v2(ctx[0]!);
    check(code, `cuMemAlloc(${mib} MiB)`);
  }
  let held = true;
  return {
    free() {
      if (!held) return;
      held = false;
      cu.cuMemFree_v2(dptr[0]!);
      cu.cuCtxDestroy_v2(ctx[0]!);
    },
  };
}

/** Whether the NVIDIA driver library loads and answers here (false on a box without it). */
export function cudaAvailable(): boolean {
  try {
    cudaInfo();
    return true;
  } catch {
    return false;
  }
}
