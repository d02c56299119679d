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
