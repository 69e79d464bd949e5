import { expect, test } from "bun:test";
import { LogHub } from "../../src/runtime/log-hub.ts";

test("LogHub: each line reaches its model's followers until they unfollow; a throwing one is dropped", () => {
  const hub = new LogHub();
  const a: string[] = [];
  const b: string[] = [];
  const offA = hub.follow("m", (l) => a.push(l));
  hub.follow("m", (l) => {
    b.push(l);
    throw new Error("broken follower");
  });
  hub.follow("other", () => {
    throw new Error("never called");
  });
  hub.publish("m", "one");
  hub.publish("m", "two");
  offA();
  hub.publish("m", "three");
  hub.publish("nobody", "x");
  expect(a).toEqual(["one", "two"]);
  expect(b).toEqual(["one"]);
});
