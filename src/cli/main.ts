#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { errorMessage, UserError } from "../common/index.js";
import { registerDevCommands } from "./dev.js";
import { registerLoginCommands } from "./login.js";
import { registerOffloadCommands } from "./offload.js";
import { registerPeerCommands } from "./peer.js";
import { registerRunCommand } from "./run.js";
import { registerTenantCommands } from "./tenant.js";
import { registerUpCommand } from "./up.js";
import { registerUserCommands } from "./user.js";

export function buildProgram(): Command {
  const program = new Command("tenantry")
    .description("multi-tenant, multi-cluster control plane for Kubernetes")
    .showHelpAfterError()
    .exitOverride();
  registerUpCommand(program);
  registerRunCommand(program);
  registerTenantCommands(program);
  registerUserCommands(program);
  registerLoginCommands(program);
  registerDevCommands(program);
  registerPeerCommands(program);
  registerOffloadCommands(program);
  return program;
}

/** Exit codes: 0 ok, 1 failure, 2 bad input or environment (one line says what to do). */
export async function main(argv = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UserError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`error: ${errorMessage(err)}\n`);
    if (process.env.TENANTRY_DEBUG) process.stderr.write(`${(err as Error).stack ?? ""}\n`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("/cli/main.ts")) {
  process.exitCode = await main();
}
