import { fileURLToPath } from "node:url";

/**
 * The arguments that make this Node.js (`process.execPath`) run one of tenantry's own programs in
 * the form tenantry itself runs in: the compiled JavaScript beside a compiled caller (dist/), the
 * TypeScript source through tsx's loader beside a source caller (tests, benchmarks). `program` is
 * the source's path relative to the caller, e.g. `./process-node/main.ts`; `caller` the caller's
 * `import.meta.url`.
 */
export function nodeProgram(program: string, caller: string): string[] {
  if (caller.endsWith(".ts")) {
    return ["--import", import.meta.resolve("tsx"), fileURLToPath(new URL(program, caller))];
  }
  return [fileURLToPath(new URL(program.replace(/\.ts$/, ".js"), caller))];
}
