#!/usr/bin/env node
// kubectl (1.26 and later) asks `kubectl_complete-tenantry <words typed>` for the completions of
// `kubectl tenantry …`, in the format tenantry's own `complete --` answers (cobra's).
import { run } from "./run.js";

const [node, script, ...words] = process.argv;
await run("tenantry", [node, script, "complete", "--", ...words]);
