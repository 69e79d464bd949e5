import { readFileSync } from "node:fs";
import { join } from "node:path";

export const SMI_FIXTURES = join(import.meta.dir, "fixtures/smi");

/** A recorded nvidia-smi output (see fixtures/smi/README.md). */
export function smi(name: string): string {
  return readFileSync(join(SMI_FIXTURES, name), "utf8");
}
