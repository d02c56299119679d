/**
 * The command groups over tenantry's custom objects that follow one pattern (objects.ts): access
 * grants, namespace templates, tenant resource quotas, replicated deployments and volume pools.
 */
import type { Command } from "commander";
import { registerGrantCommands } from "./grant.js";
import { registerQuotaCommands } from "./quota.js";
import { registerReplicateCommands } from "./replicate.js";
import { registerTemplateCommands } from "./template.js";
import { registerVolumePoolCommands } from "./volume-pool.js";

export function registerCapabilityCommands(program: Command): void {
  registerGrantCommands(program);
  registerTemplateCommands(program);
  registerQuotaCommands(program);
  registerReplicateCommands(program);
  registerVolumePoolCommands(program);
}
