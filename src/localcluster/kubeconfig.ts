import { writeFile } from "node:fs/promises";
import { kubeconfigYaml } from "../kube/index.js";
import type { KeyPairPem } from "../pki/index.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/**
 * A self-contained kubeconfig (certificates embedded). The user entry is named after the cluster
 * so that kubeconfigs of several clusters can be merged, and clients that cache credentials by
 * user name never mix two clusters up.
 */
export function renderKubeconfig(options: {
  cluster: string;
  server: string;
  caPem: string;
  client: KeyPairPem;
  namespace?: string;
}): string {
  const context = `tenantry-${options.cluster}`;
  return kubeconfigYaml([
    {
      name: context,
      cluster: { name: context, server: options.server, caData: b64(options.caPem) },
      user: {
        name: `${context}-admin`,
        certData: b64(options.client.certPem),
        keyData: b64(options.client.keyPem),
      },
      ...(options.namespace ? { namespace: options.namespace } : {}),
    },
  ]);
}

export async function writeKubeconfig(
  path: string,
  options: Parameters<typeof renderKubeconfig>[0],
): Promise<void> {
  await writeFile(path, renderKubeconfig(options), { mode: 0o600 });
}
