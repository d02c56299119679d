#!/usr/bin/env node
// Runs the TypeScript CLI directly; tsx compiles it on the fly.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main();
