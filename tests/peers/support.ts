/** An in-process gateway with peers: the fake gateway plus a real peer table on a fake clock. */
import type { PeerStatusJson } from "../../src/peers/table.ts";
import { PeerTable } from "../../src/peers/table.ts";
import { type FakeGw, fakeGateway } from "../support/fake-gateway.ts";
import { FakeTimers } from "../support/fake-timers.ts";

export interface PeerGw extends FakeGw {
  peers: PeerTable;
  timers: FakeTimers;
  /** Every `event: peer` the table raised. */
  changes: PeerStatusJson[];
}

export function peerGateway(toml: string): PeerGw {
  const timers = new FakeTimers();
  const gw = fakeGateway(toml, timers) as PeerGw;
  gw.timers = timers;
  gw.changes = [];
  gw.peers = new PeerTable(
    gw.config.peers,
    () => timers.now(),
    (s) => gw.changes.push(s),
  );
  return gw;
}

/** What a refused connection looks like to qm (Bun's fetch error). */
export function refused(): Error {
  return Object.assign(
    new TypeError("Unable to connect. Is the computer able to access the url?"),
    {
      code: "ConnectionRefused",
    },
  );
}
