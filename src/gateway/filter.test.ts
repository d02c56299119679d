import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import { filterList, objectVisible, WatchFilter, watchFilterStream } from "./filter.js";
import type { ObjectLike } from "./scope.js";

const visible = (o: ObjectLike) => o.metadata?.labels?.pool === "a";
const node = (name: string, pool: string) => ({ kind: "Node", metadata: { name, labels: { pool } } });
const row = (name: string, pool: string) => ({
  cells: [name],
  object: { metadata: { name, labels: { pool } } },
});

describe("filterList", () => {
  test("keeps visible items and drops remainingItemCount", () => {
    const list = {
      kind: "NodeList",
      metadata: { resourceVersion: "5", remainingItemCount: 10 },
      items: [node("n1", "a"), node("n2", "b")],
    };
    assert.deepEqual(filterList(list, visible), {
      kind: "NodeList",
      metadata: { resourceVersion: "5" },
      items: [node("n1", "a")],
    });
  });

  test("keeps visible Table rows, without their objects when the caller asked for none", () => {
    const table = {
      kind: "Table",
      columnDefinitions: [{ name: "Name" }],
      rows: [row("n1", "a"), row("n2", "b")],
    };
    const filtered = filterList(table, visible, false) as { rows: unknown[] };
    assert.deepEqual(filtered.rows, [{ cells: ["n1"] }]);
  });

  test("objectVisible for an object and a one-row Table", () => {
    assert.equal(objectVisible(node("n1", "a"), visible), true);
    assert.equal(objectVisible(node("n2", "b"), visible), false);
    assert.equal(objectVisible({ kind: "Table", rows: [row("n2", "b")] }, visible), false);
  });
});

describe("WatchFilter", () => {
  test("drops invisible objects, turns visibility changes into ADDED and DELETED, passes bookmarks", () => {
    const filter = new WatchFilter(visible);
    const event = (type: string, object: unknown) => JSON.stringify({ type, object });
    const types = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { type: string }).type);
    assert.deepEqual(types(filter.transform(event("ADDED", node("n1", "a")))), ["ADDED"]);
    assert.deepEqual(filter.transform(event("ADDED", node("n2", "b"))), []);
    assert.deepEqual(filter.transform(event("MODIFIED", node("n2", "b"))), []);
    assert.deepEqual(types(filter.transform(event("MODIFIED", node("n2", "a")))), ["ADDED"]);
    assert.deepEqual(types(filter.transform(event("MODIFIED", node("n1", "b")))), ["DELETED"]);
    assert.deepEqual(filter.transform(event("DELETED", node("n1", "b"))), []);
    assert.deepEqual(types(filter.transform(event("DELETED", node("n2", "a")))), ["DELETED"]);
    const bookmark = event("BOOKMARK", { kind: "Node", metadata: { resourceVersion: "9" } });
    assert.deepEqual(filter.transform(bookmark), [bookmark]);
    assert.deepEqual(filter.transform("not json"), []);
  });

  test("Table events keep the column definitions of the first event even when it is dropped", () => {
    const filter = new WatchFilter(visible);
    const first = { kind: "Table", columnDefinitions: [{ name: "Name" }], rows: [row("n2", "b")] };
    const second = { kind: "Table", columnDefinitions: null, rows: [row("n1", "a")] };
    assert.deepEqual(filter.transform(JSON.stringify({ type: "ADDED", object: first })), []);
    const [out] = filter.transform(JSON.stringify({ type: "ADDED", object: second }));
    assert.deepEqual(
      (JSON.parse(out!) as { object: { columnDefinitions: unknown } }).object.columnDefinitions,
      [{ name: "Name" }],
    );
  });

  test("the stream splits lines across chunks and multi-byte characters", async () => {
    const lines = `${JSON.stringify({ type: "ADDED", object: node("ü1", "a") })}\n${JSON.stringify({
      type: "ADDED",
      object: node("n2", "b"),
    })}\n`;
    const bytes = Buffer.from(lines);
    const chunks = [bytes.subarray(0, 30), bytes.subarray(30, 31), bytes.subarray(31)];
    let out = "";
    for await (const chunk of Readable.from(chunks).pipe(watchFilterStream(new WatchFilter(visible))))
      out += chunk;
    assert.equal(out.trim().split("\n").length, 1);
    assert.match(out, /ü1/);
  });
});
