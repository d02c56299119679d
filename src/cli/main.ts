#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { UserError } from "../common/index.js";
import { describeError, statusCode, statusOf, statusReason } from "../kube/index.js";
import { registerCapabilityCommands } from "./capabilities.js";
import { registerCloudCommands } from "./cloud.js";
import { registerClusterCommands } from "./cluster.js";
import { registerDevCommands } from "./dev.js";
import { registerDoctorCommand } from "./doctor.js";
import { registerLoginCommands } from "./login.js";
import { registerMonitorCommands } from "./monitor.js";
import { registerNodeCommands } from "./node.js";
import { registerOffloadCommands } from "./offload.js";
import { registerPeerCommands } from "./peer.js";
import { registerRunCommand } from "./run.js";
import { registerRuntimeCommands } from "./runtime.js";
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
  registerRuntimeCommands(program);
  registerMonitorCommands(program);
  registerClusterCommands(program);
  registerCloudCommands(program);
  registerNodeCommands(program);
  registerCapabilityCommands(program);
  registerDoctorCommand(program);
  return program;
}

/**
 * What the CLI prints for a failure, and its exit code: 0 ok, 1 failure, 2 bad input, 3 not found,
 * 4 already exists. An API server's refusal prints its own message (which names the field), never
 * the raw HTTP response.
 */
export function errorReport(err: unknown): { exitCode: number; message: string } {
  if (err instanceof UserError) return { exitCode: err.exitCode, message: err.message };
  const code = statusCode(err);
  if (code === undefined) return { exitCode: 1, message: describeError(err) };
  const status = statusOf(err);
  const message = status?.message ?? describeError(err);
  if (code === 404) return { exitCode: 3, message };
  if (code === 409 && statusReason(err) === "AlreadyExists") return { exitCode: 4, message };
  if (code === 400 || code === 403 || code === 422) return { exitCode: 2, message };
  return { exitCode: 1, message: status?.message ? `${message} (HTTP ${code})` : message };
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    // A command that finished but failed (a backup that failed, a doctor that found errors) set it.
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const report = errorReport(err);
    process.stderr.write(`error: ${report.message}\n`);
    if (process.env.TENANTRY_DEBUG && err instanceof Error) process.stderr.write(`${err.stack ?? ""}\n`);
    return report.exitCode;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("/cli/main.ts")) {
  process.exitCode = await main();
}
