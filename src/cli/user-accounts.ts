import type { Command } from "commander";
import { pino } from "pino";
import { TENANTRY_NAMESPACE } from "../app/index.js";
import { UserError } from "../common/index.js";
import { BuiltinIdentity } from "../identity/index.js";
import { loadClusterClient } from "../kube/index.js";
import { resolveKubeconfig } from "./kube-context.js";
import { collect } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

/** The built-in identity service's users, managed as the cluster admin (no running tenantry needed). */
function identityFor(command: Command): BuiltinIdentity {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  const client = loadClusterClient("cluster", resolveKubeconfig(kubeconfig));
  return new BuiltinIdentity({
    client,
    namespace: TENANTRY_NAMESPACE,
    issuer: "unused",
    logger: pino({ level: "silent" }),
  });
}

async function readSecret(): Promise<string> {
  if (process.stdin.isTTY)
    throw new UserError("pass the password on standard input, e.g. `echo … | tenantry user create …`");
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, "");
}

/** `tenantry user create|list|delete|passwd|revoke-tokens|unlock`: accounts of the built-in identity service. */
export function registerUserAccountCommands(user: Command): void {
  user
    .command("create")
    .description("create a built-in user; the password is read from standard input")
    .argument("<name>", "user name: lowercase letters, digits, - and .")
    .option("--tenant <name>", "the user's tenant (joined, or created, at first login)")
    .option("--admin", "the user administers their tenant")
    .option("--group <name>", "a group the user belongs to (repeatable)", collect)
    .option("--display-name <text>", "full name")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(
      async (
        name: string,
        opts: { tenant?: string; admin?: boolean; group?: string[]; displayName?: string },
        command: Command,
      ) => {
        const password = await readSecret();
        await identityFor(command).createUser({
          name,
          password,
          ...(opts.tenant ? { tenant: opts.tenant } : {}),
          tenantAdmin: opts.admin ?? false,
          ...(opts.group ? { groups: opts.group } : {}),
          ...(opts.displayName ? { displayName: opts.displayName } : {}),
        });
        process.stdout.write(`user ${name} created\n`);
      },
    );

  user
    .command("list")
    .description("list built-in users")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(async (opts: { output: OutputFormat }, command: Command) => {
      const rows = (await identityFor(command).listUsers()).map((u) => ({
        name: u.metadata!.name!,
        tenant: u.spec.tenant ?? "",
        admin: u.spec.tenantAdmin ?? false,
        disabled: u.spec.disabled ?? false,
        groups: u.spec.groups ?? [],
        lastLogin: u.status?.lastLogin ?? "",
      }));
      printResult(rows, opts.output, () =>
        columns([
          ["NAME", "TENANT", "ADMIN", "DISABLED", "LAST LOGIN", "GROUPS"],
          ...rows.map((r) => [
            r.name,
            r.tenant,
            String(r.admin),
            String(r.disabled),
            r.lastLogin || "never",
            r.groups.join(","),
          ]),
        ]).join("\n"),
      );
    });

  user
    .command("delete")
    .description("delete a built-in user; their tokens stop working at once")
    .argument("<name>")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(async (name: string, _opts: unknown, command: Command) => {
      if (!(await identityFor(command).deleteUser(name)))
        throw new UserError(`user "${name}" does not exist`, 4);
      process.stdout.write(`user ${name} deleted\n`);
    });

  user
    .command("passwd")
    .description("set a built-in user's password, read from standard input")
    .argument("<name>")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(async (name: string, _opts: unknown, command: Command) => {
      await identityFor(command).setPassword(name, await readSecret());
      process.stdout.write(`password of ${name} changed\n`);
    });

  user
    .command("revoke-tokens")
    .description("revoke every token a built-in user holds now")
    .argument("<name>")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(async (name: string, _opts: unknown, command: Command) => {
      await identityFor(command).revokeAllTokens(name);
      process.stdout.write(`every token of ${name} issued until now is revoked\n`);
    });

  user
    .command("unlock")
    .description("lift a built-in user's login lock at once (wrong passwords until now stop counting)")
    .argument("<name>")
    .option("--kubeconfig <path>", "cluster admin kubeconfig")
    .action(async (name: string, _opts: unknown, command: Command) => {
      await identityFor(command).unlockLogins(name);
      process.stdout.write(`${name} may log in again: wrong passwords until now no longer count\n`);
    });
}
