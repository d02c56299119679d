import { stringify } from "yaml";
import { UserError } from "../common/index.js";

export type OutputFormat = "text" | "json" | "yaml";

export function printResult(value: unknown, format: OutputFormat, text: () => string): void {
  switch (format) {
    case "json":
      process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
      return;
    case "yaml":
      process.stdout.write(stringify(value));
      return;
    case "text":
      process.stdout.write(`${text()}\n`);
      return;
    default:
      throw new UserError(`--output must be text, json or yaml, got "${format}"`);
  }
}

/** Rows as left-aligned columns two spaces apart, as kubectl prints tables. */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd(),
  );
}
