import { Transform, type TransformCallback } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ObjectLike } from "./scope.js";

type Visible = (object: ObjectLike) => boolean;

interface TableRow {
  object?: ObjectLike;
  [key: string]: unknown;
}

interface Table {
  kind: "Table";
  columnDefinitions?: unknown[] | null;
  rows?: TableRow[];
  metadata?: Record<string, unknown>;
}

function isTable(value: unknown): value is Table {
  return (value as { kind?: unknown } | null)?.kind === "Table";
}

/**
 * The objects a response body stands for: a Table's rows carry each object's metadata (requested
 * with includeObject=Metadata), any other body is the object itself.
 */
function rowObject(row: TableRow): ObjectLike {
  return row.object ?? {};
}

/**
 * Keeps the visible items of a List or the visible rows of a Table. remainingItemCount is dropped:
 * it counted objects the caller does not see.
 */
export function filterList(body: unknown, visible: Visible, keepRowObjects = true): unknown {
  if (isTable(body)) {
    const rows = (body.rows ?? []).filter((row) => visible(rowObject(row)));
    if (!keepRowObjects) for (const row of rows) delete row.object;
    if (body.metadata) delete body.metadata.remainingItemCount;
    return { ...body, rows };
  }
  const list = body as { items?: ObjectLike[]; metadata?: Record<string, unknown> } | null;
  if (!list || !Array.isArray(list.items)) return body;
  if (list.metadata) delete list.metadata.remainingItemCount;
  return { ...list, items: list.items.filter(visible) };
}

/** Whether a single object (or a one-row Table of it) may be shown. */
export function objectVisible(body: unknown, visible: Visible): boolean {
  if (isTable(body)) return (body.rows ?? []).every((row) => visible(rowObject(row)));
  return visible(body as ObjectLike);
}

interface WatchEvent {
  type?: string;
  object?: unknown;
}

/**
 * Filters a JSON watch stream event by event. It remembers which objects the caller has seen, so
 * an object that stops being visible is reported DELETED and one that becomes visible ADDED, as the
 * API server does for label selectors; bookmarks and errors pass unchanged.
 */
export class WatchFilter {
  private readonly seen = new Set<string>();
  private columnDefinitions: unknown[] | undefined;
  private sentColumns = false;

  constructor(
    private readonly visible: Visible,
    private readonly keepRowObjects = true,
  ) {}

  /** Lines to send for one line received (without newlines). */
  transform(line: string): string[] {
    if (!line.trim()) return [];
    let event: WatchEvent;
    try {
      event = JSON.parse(line) as WatchEvent;
    } catch {
      // Not JSON: nothing the gateway can check, so nothing it may pass on.
      return [];
    }
    if (event.type !== "ADDED" && event.type !== "MODIFIED" && event.type !== "DELETED") {
      return [line];
    }
    if (isTable(event.object)) return this.tableEvent(event.type, event.object);
    const type = this.decide(event.type, event.object as ObjectLike);
    return type ? [JSON.stringify({ ...event, type })] : [];
  }

  private tableEvent(type: string, table: Table): string[] {
    if (table.columnDefinitions?.length) this.columnDefinitions ??= table.columnDefinitions;
    const out: string[] = [];
    for (const row of table.rows ?? []) {
      const decided = this.decide(type, rowObject(row));
      if (!decided) continue;
      if (!this.keepRowObjects) delete row.object;
      const columnDefinitions = this.sentColumns ? table.columnDefinitions : this.columnDefinitions;
      this.sentColumns = true;
      out.push(JSON.stringify({ type: decided, object: { ...table, columnDefinitions, rows: [row] } }));
    }
    return out;
  }

  private decide(type: string, object: ObjectLike): string | undefined {
    const key = object.metadata?.name ?? "";
    const was = this.seen.has(key);
    const is = this.visible(object);
    if (type === "DELETED") {
      this.seen.delete(key);
      return was || is ? "DELETED" : undefined;
    }
    if (is) this.seen.add(key);
    else this.seen.delete(key);
    if (was && is) return type;
    if (is) return "ADDED";
    if (was) return "DELETED";
    return undefined;
  }
}

/** A stream applying a {@link WatchFilter} to newline-delimited JSON. */
export function watchFilterStream(filter: WatchFilter): Transform {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  const flushLines = (stream: Transform, text: string) => {
    pending += text;
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      for (const out of filter.transform(line)) stream.push(`${out}\n`);
      newline = pending.indexOf("\n");
    }
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      flushLines(this, decoder.write(chunk));
      callback();
    },
    flush(callback: TransformCallback) {
      flushLines(this, `${decoder.end()}\n`);
      callback();
    },
  });
}
