#!/usr/bin/env node
// kubectl's plugin: kubectl runs `kubectl-tenantry` found on PATH for `kubectl tenantry …`.
import { run } from "./run.js";

await run("kubectl tenantry");
