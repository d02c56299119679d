import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { createProgress, defaultClustersDir, UserError } from "../common/index.js";
import {
  DEFAULT_EXPIRATION_SECONDS,
  formatDuration,
  type IssuedUserCertificates,
  issueUserCertificates,
  keyMatchesRequest,
  kubeconfigCertificates,
  parseCertificateRequest,
  parseDuration,
  renderUserKubeconfig,
  renewUserKubeconfig,
  userEntryName,
  writeKubeconfigFile,
} from "../identity/index.js";
import { type ClusterClient, loadClusterClient } from "../kube/index.js";
import { collect, EXIT } from "./objects.js";
import { type OutputFormat, printResult } from "./output.js";
import { registerUserAccountCommands } from "./user-accounts.js";

interface ClusterOptions {
  kubeconfig?: string[];
  clustersDir?: string;
}

function withClusterOptions(command: Command): Command {
  return command
    .option(
      "--kubeconfig <name=path>",
      "admin kubeconfig of a cluster not run by the embedded default, repeatable",
      collect,
    )
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir());
}

/**
 * Admin clients by cluster name: `--kubeconfig name=path` first, else the embedded default's
 * `<clusters-dir>/<name>/kubeconfig`.
 */
function clusterResolver(opts: ClusterOptions) {
  const explicit = new Map<string, string>();
  for (const entry of opts.kubeconfig ?? []) {
    const at = entry.indexOf("=");
    if (at <= 0 || at === entry.length - 1) {
      throw new UserError(`--kubeconfig "${entry}" must be name=path, e.g. edge-3=./edge-3.kubeconfig`);
    }
    const path = entry.slice(at + 1);
    if (!existsSync(path)) throw new UserError(`--kubeconfig ${entry}: no such file`);
    explicit.set(entry.slice(0, at), path);
  }
  const dir = opts.clustersDir ?? defaultClustersDir();
  const embedded = () =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, "kubeconfig")))
          .map((e) => e.name)
          .sort()
      : [];
  return {
    /** Every cluster known: the explicit ones if any, else the embedded default's. */
    known: () => (explicit.size ? [...explicit.keys()] : embedded()),
    resolve: (names: string[]): ClusterClient[] =>
      names.map((name) => {
        const path = explicit.get(name) ?? join(dir, name, "kubeconfig");
        if (!existsSync(path)) {
          const known = [...new Set([...explicit.keys(), ...embedded()])];
          throw new UserError(
            `no cluster named "${name}": pass --kubeconfig ${name}=<path>${known.length ? ` (known: ${known.join(", ")})` : ""}`,
          );
        }
        return loadClusterClient(name, path);
      }),
  };
}

function summary(issued: IssuedUserCertificates, path: string): string {
  const contexts = issued.clusters.flatMap((c) => c.namespaces.map((n) => `${c.cluster}/${n}`));
  return [
    `wrote ${path} for ${issued.username} in tenant ${issued.tenant}${issued.groups.length ? ` (groups ${issued.groups.join(", ")})` : ""}`,
    ...issued.clusters.map(
      (c) =>
        `  ${c.cluster}: certificate signed in ${(c.issueMs / 1000).toFixed(2)}s, namespaces ${c.namespaces.join(", ")}`,
    ),
    `contexts: ${contexts.join(", ")} (current: ${contexts[0]})`,
    `try: kubectl --kubeconfig ${path} --context ${contexts[0]} get pods`,
  ].join("\n");
}

function registerUserCertificate(user: Command): void {
  withClusterOptions(
    user
      .command("certificate")
      .description(
        "issue a certificate for a user in every cluster of a tenant and write one kubeconfig with a context per cluster and namespace",
      )
      .argument("<username>", "the user (certificate CN)")
      .requiredOption("--tenant <name>", "tenant whose namespaces the contexts point at")
      .option(
        "--cluster <name>",
        "cluster to sign in, repeatable (default: every known cluster holding the tenant)",
        collect,
      )
      .option(
        "--group <name>",
        "group for the certificate (O), repeatable; with --csr, the groups it may name",
        collect,
      )
      .option("--csr <file>", "the user's own PEM certificate request: no private key is made")
      .option(
        "--key <file>",
        "with --csr: the user's private key file, referred to by path from the kubeconfig",
      )
      .option(
        "--expiration <duration>",
        "requested lifetime, 10m to 30d",
        formatDuration(DEFAULT_EXPIRATION_SECONDS),
      )
      .option("-o, --output <path>", "kubeconfig to write (default ./<tenant>-<username>.kubeconfig)")
      .option("--force", "overwrite an existing kubeconfig"),
  ).action(async (username: string, opts) => {
    const path = resolve(opts.output ?? `${opts.tenant}-${username}.kubeconfig`);
    if (existsSync(path) && !opts.force) {
      throw new UserError(
        `${path} exists: pass --force to overwrite it, or renew it with \`tenantry user renew\``,
        EXIT.exists,
      );
    }
    if (opts.key && !opts.csr)
      throw new UserError("--key goes with --csr; without --csr tenantry makes the key");
    let certificateRequest: string | undefined;
    if (opts.csr) {
      certificateRequest = await readFile(opts.csr, "utf8").catch((err: Error) => {
        throw new UserError(`--csr ${opts.csr}: ${err.message}`);
      });
    }
    if (opts.key) {
      const key = await readFile(opts.key, "utf8").catch((err: Error) => {
        throw new UserError(`--key ${opts.key}: ${err.message}`);
      });
      let matches = false;
      try {
        matches = keyMatchesRequest(key, await parseCertificateRequest(certificateRequest!));
      } catch (err) {
        if (err instanceof UserError) throw err;
        throw new UserError(`--key ${opts.key}: not a PEM private key`);
      }
      if (!matches)
        throw new UserError(`--key ${opts.key} is not the key of the request in --csr ${opts.csr}`);
    }
    const clusters = clusterResolver(opts);
    const names: string[] = opts.cluster ?? clusters.known();
    if (names.length === 0) {
      throw new UserError(
        "no clusters: pass --cluster and --kubeconfig name=path, or start the embedded default",
      );
    }
    const progress = createProgress("user certificate");
    const issued = await issueUserCertificates({
      username,
      tenant: opts.tenant,
      clusters: clusters.resolve(names),
      groups: opts.group ?? [],
      ...(certificateRequest ? { certificateRequest } : {}),
      expirationSeconds: parseDuration(opts.expiration),
      skipClustersWithoutNamespaces: !opts.cluster,
      onProgress: (cluster, message) => progress.log(`${cluster}: ${message}`),
    });
    await writeKubeconfigFile(
      path,
      renderUserKubeconfig(issued, opts.key ? { clientKeyFile: opts.key } : {}),
    );
    progress.finish(`${issued.clusters.length} cluster(s)`);
    process.stdout.write(`${summary(issued, path)}\n`);
    if (!issued.keyPem && !opts.key) {
      const first = issued.clusters[0]!.cluster;
      process.stderr.write(
        `note: the kubeconfig holds no private key (you brought your own request); add yours to each user entry, e.g.\n  kubectl --kubeconfig ${path} config set-credentials ${userEntryName(first, username)} --client-key=<your key file> --embed-certs\n`,
      );
    }
  });
}

function registerUserCertificates(user: Command): void {
  user
    .command("certificates")
    .description("the client certificates in a kubeconfig: subject, groups, validity, and which to renew")
    .argument("<kubeconfig>", "kubeconfig file")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (path: string, opts: { output: OutputFormat }) => {
      const rows = await kubeconfigCertificates(path);
      if (rows.length === 0) throw new UserError(`${path} has no user with a client certificate`);
      const json = rows.map((r) => ({
        user: r.user,
        clusters: r.clusters,
        commonName: r.commonName,
        groups: r.groups,
        notBefore: r.notBefore.toISOString(),
        notAfter: r.notAfter.toISOString(),
        lifetimeSeconds: Math.round(r.lifetimeSeconds),
        remainingSeconds: Math.round(r.remainingSeconds),
        state: r.state,
      }));
      printResult(json, opts.output, () =>
        [
          ["USER", "CN", "GROUPS", "NOT BEFORE", "NOT AFTER", "REMAINING", "STATUS"].join("\t"),
          ...json.map((r) =>
            [
              r.user,
              r.commonName,
              r.groups.join(",") || "-",
              r.notBefore,
              r.notAfter,
              r.remainingSeconds > 0
                ? formatDuration(r.remainingSeconds)
                : `expired ${formatDuration(-r.remainingSeconds)} ago`,
              r.state,
            ].join("\t"),
          ),
        ].join("\n"),
      );
    });
}

export function registerUserCommands(program: Command): void {
  const user = program
    .command("user")
    .description(
      "users of the built-in identity service, and client certificates signed by each cluster of their tenant",
    );
  registerUserAccountCommands(user);
  registerUserCertificate(user);
  registerUserCertificates(user);

  withClusterOptions(
    user
      .command("renew")
      .description(
        "issue a kubeconfig's certificates again (same user, tenant, groups, clusters) and rewrite it",
      )
      .argument("<kubeconfig>", "kubeconfig written by `tenantry user certificate`")
      .option("--new-key", "make a new key pair instead of keeping the one in the file")
      .option("--expiration <duration>", "requested lifetime (default: as first issued)"),
  ).action(async (path: string, opts) => {
    const clusters = clusterResolver(opts);
    const progress = createProgress("user renew");
    const issued = await renewUserKubeconfig(path, {
      clusters: (names) => clusters.resolve(names),
      newKey: opts.newKey === true,
      ...(opts.expiration ? { expirationSeconds: parseDuration(opts.expiration) } : {}),
      onProgress: (cluster, message) => progress.log(`${cluster}: ${message}`),
    });
    progress.finish(`${issued.clusters.length} cluster(s)`);
    process.stdout.write(`${summary(issued, resolve(path))}\n`);
  });
}
