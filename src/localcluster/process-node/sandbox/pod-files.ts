import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { CLUSTER_DOMAIN, DNS_SERVICE_IP } from "../network/index.js";

/**
 * The files the kubelet writes for each pod and every container mounts over the image's:
 * /etc/hosts (the pod's name on its address, hostAliases), /etc/resolv.conf (the cluster's DNS
 * Service and search path, by dnsPolicy and dnsConfig) and /etc/hostname.
 */
export function hostsFile(pod: V1Pod, podIP: string): string {
  const hostname = pod.spec?.hostname ?? pod.metadata?.name ?? "";
  const fqdn = pod.spec?.subdomain
    ? `${hostname}.${pod.spec.subdomain}.${pod.metadata?.namespace}.svc.${CLUSTER_DOMAIN}\t`
    : "";
  const lines = [
    "# Kubernetes-managed hosts file.",
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "fe00::0\tip6-localnet",
    "fe00::0\tip6-mcastprefix",
    "fe00::1\tip6-allnodes",
    "fe00::2\tip6-allrouters",
    `${podIP}\t${fqdn}${hostname}`,
  ];
  const aliases = pod.spec?.hostAliases ?? [];
  if (aliases.length) lines.push("", "# Entries added by HostAliases.");
  for (const alias of aliases) lines.push(`${alias.ip}\t${(alias.hostnames ?? []).join("\t")}`);
  return `${lines.join("\n")}\n`;
}

export async function resolvConf(pod: V1Pod): Promise<string> {
  const policy = pod.spec?.dnsPolicy ?? "ClusterFirst";
  const config = pod.spec?.dnsConfig;
  const namespace = pod.metadata?.namespace ?? "default";
  let nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  if ((policy === "ClusterFirst" && !pod.spec?.hostNetwork) || policy === "ClusterFirstWithHostNet") {
    nameservers = [DNS_SERVICE_IP];
    searches = [`${namespace}.svc.${CLUSTER_DOMAIN}`, `svc.${CLUSTER_DOMAIN}`, CLUSTER_DOMAIN];
    options = ["ndots:5"];
  } else if (policy !== "None") {
    const host = await readFile("/etc/resolv.conf", "utf8").catch(() => "");
    for (const line of host.split("\n")) {
      const [key, ...values] = line.trim().split(/\s+/);
      if (key === "nameserver") nameservers.push(...values);
      if (key === "search") searches.push(...values);
      if (key === "options") options.push(...values);
    }
  }
  nameservers.push(...(config?.nameservers ?? []));
  searches.push(...(config?.searches ?? []));
  for (const option of config?.options ?? []) {
    const text = option.value === undefined ? option.name! : `${option.name}:${option.value}`;
    options = options.filter((o) => o.split(":")[0] !== option.name);
    options.push(text);
  }
  return [
    ...(searches.length ? [`search ${[...new Set(searches)].join(" ")}`] : []),
    ...[...new Set(nameservers)].slice(0, 3).map((ns) => `nameserver ${ns}`),
    ...(options.length ? [`options ${options.join(" ")}`] : []),
    "",
  ].join("\n");
}

/** Writes the pod's files into its folder; answers their paths by the file they replace. */
export async function writePodFiles(pod: V1Pod, podIP: string, dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>([
    ["/etc/hosts", join(dir, "etc-hosts")],
    ["/etc/resolv.conf", join(dir, "resolv.conf")],
    ["/etc/hostname", join(dir, "hostname")],
  ]);
  await writeFile(files.get("/etc/hosts")!, hostsFile(pod, podIP));
  await writeFile(files.get("/etc/resolv.conf")!, await resolvConf(pod));
  await writeFile(files.get("/etc/hostname")!, `${pod.spec?.hostname ?? pod.metadata?.name}\n`);
  return files;
}
