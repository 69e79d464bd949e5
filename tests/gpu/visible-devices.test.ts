/** Placing a model on its cards: CUDA_VISIBLE_DEVICES, or ROCm's variables on an AMD box. */
import { afterEach, expect, test } from "bun:test";
import { placementEnv, setPlacementKind } from "../../src/gpu/visible-devices.ts";
import { spawnModel } from "../../src/process/spawn.ts";
import { modelFromToml } from "../support/config.ts";

afterEach(() => setPlacementKind("none"));

test("NVIDIA: the card ids in CUDA_VISIBLE_DEVICES", () => {
  expect(placementEnv([2, 3], "nvidia")).toEqual({ CUDA_VISIBLE_DEVICES: "2,3" });
  expect(placementEnv([1], "nvidia-unified")).toEqual({ CUDA_VISIBLE_DEVICES: "1" });
});

test("AMD: the ids in ROCR_VISIBLE_DEVICES, HIP's counting from 0 within them", () => {
  expect(placementEnv([2, 3], "amd")).toEqual({
    ROCR_VISIBLE_DEVICES: "2,3",
    HIP_VISIBLE_DEVICES: "0,1",
    CUDA_VISIBLE_DEVICES: "0,1",
  });
});

test("a spawned model on an AMD box sees ROCm's variables and its GPU_IDS macro", async () => {
  setPlacementKind("amd");
  const model = modelFromToml(
    `[models.m]\ncmd = """sh -c 'echo "$ROCR_VISIBLE_DEVICES $HIP_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES \${GPU_IDS}"'"""\nproxy = "http://127.0.0.1:9"\n`,
  );
  const proc = spawnModel(model, {}, [1]);
  expect(await proc.exited).toBe(0);
  expect((await new Response(proc.stdout).text()).trim()).toBe("1 0 0 1");
});
