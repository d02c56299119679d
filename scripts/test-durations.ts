/**
 * A test reporter (`--test-reporter`) that writes how long each test file took, as JSON
 * `{ "<file>": seconds }`. `npm test` starts the longest files first with it, so the two
 * concurrent workers finish together instead of one long file running alone at the end.
 */
import { relative } from "node:path";

type TestEvent = {
  type: string;
  data: { nesting?: number; file?: string; details?: { duration_ms?: number } };
};

export default async function* testDurations(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const seconds = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { nesting, file, details } = event.data;
    // Top-level tests only: their durations include their subtests'.
    if (nesting !== 0 || !file || details?.duration_ms === undefined) continue;
    const name = relative(process.cwd(), file);
    seconds.set(name, (seconds.get(name) ?? 0) + details.duration_ms / 1000);
  }
  const rounded = Object.fromEntries([...seconds].map(([file, s]) => [file, Math.round(s * 10) / 10]));
  yield `${JSON.stringify(rounded, null, 1)}\n`;
}
