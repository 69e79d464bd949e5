import { expect, test } from "bun:test";
import { EventHub } from "../../src/runtime/event-hub.ts";

test("EventHub: ids 1, 2, …; since(id) gives what came after, or null once it is not all kept", () => {
  const hub = new EventHub(3);
  const heard: [string, number][] = [];
  const off = hub.subscribe((e, id) => heard.push([e.type, id]));
  expect([hub.lastId, hub.since(0)]).toEqual([0, []]);
  for (const type of ["a", "b", "c"]) hub.publish({ type });
  expect(heard).toEqual([
    ["a", 1],
    ["b", 2],
    ["c", 3],
  ]);
  expect(hub.since(1)?.map((e) => e.id)).toEqual([2, 3]);
  expect(hub.since(0)?.map((e) => e.id)).toEqual([1, 2, 3]);
  hub.publish({ type: "d" });
  // Event 1 is no longer kept: a client that saw none can no longer catch up.
  expect(hub.since(0)).toBeNull();
  expect(hub.since(1)?.map((e) => e.event.type)).toEqual(["b", "c", "d"]);
  expect([hub.since(4), hub.since(5), hub.since(-1), hub.since(1.5)]).toEqual([
    [],
    null,
    null,
    null,
  ]);
  off();
  hub.publish({ type: "e" });
  expect(heard).toHaveLength(4);
});
