/**
 * nvidia-smi prints its own failures on stdout, not stderr, and a query that fails
 * still looks like text. These are the messages seen across driver generations; each maps
 * to a sentence a person can act on. Exit codes are in the nvidia-smi(1) man page,
 * "RETURN VALUE".
 */

const MESSAGES: ReadonlyArray<readonly [RegExp, (m: RegExpMatchArray) => string]> = [
  [/No devices were found/i, () => "nvidia-smi found no GPU"],
  [
    /couldn't communicate with the NVIDIA driver/i,
    () => "nvidia-smi cannot talk to the NVIDIA driver (not loaded, or not installed)",
  ],
  [
    /Failed to initialize NVML: Driver\/library version mismatch/i,
    () => "NVIDIA driver and library versions differ (driver updated without a reboot?)",
  ],
  [/Failed to initialize NVML: (.+)/i, (m) => `nvidia-smi cannot initialise NVML: ${m[1]!.trim()}`],
  [/couldn't find libnvidia-ml\.so/i, () => "nvidia-smi cannot find libnvidia-ml.so"],
  [/GPU is lost/i, () => "a GPU fell off the bus (nvidia-smi: GPU is lost)"],
  [
    /Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)?:?\s*(.*)/i,
    (m) => `nvidia-smi cannot reach GPU ${m[1] ?? "?"}: ${m[2]?.trim() || "unknown error"}`,
  ],
  [
    /Field "([^"]+)" is not a valid field to query/i,
    (m) => `this nvidia-smi is too old to report "${m[1]}"`,
  ],
  [
    /Invalid combination of input arguments|is not recognized|Unknown option/i,
    () => "this nvidia-smi does not understand the query options",
  ],
];

/** Why `text` is an nvidia-smi error message, or null when it is not one we know. */
export function smiFailure(text: string): string | null {
  for (const [re, reason] of MESSAGES) {
    const m = text.match(re);
    if (m) return reason(m);
  }
  return null;
}

/** nvidia-smi(1) "RETURN VALUE", for a failure whose output we did not recognise. */
const EXIT_CODES: Record<number, string> = {
  2: "an invalid argument or flag",
  3: "the operation is not available on this device",
  4: "insufficient permissions",
  6: "the query was unsuccessful",
  8: "an external power cable is not attached",
  9: "the NVIDIA driver is not loaded",
  10: "an interrupt issue with a GPU",
  12: "the NVML shared library could not be found",
  13: "a function not implemented by this driver",
  14: "a corrupted infoROM",
  15: "a GPU fell off the bus",
};

export function exitCodeReason(code: number, name = "nvidia-smi"): string {
  const what = EXIT_CODES[code];
  return what ? `${name} exited ${code}: ${what}` : `${name} exited ${code}`;
}
