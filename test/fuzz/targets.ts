/**
 * Every REST API and webhook endpoint tenantry serves, by its OpenAPI document: the fuzz test
 * (apis.test.ts) drives each with schemathesis. An API joins by adding an entry here: where its
 * document is, and what a request needs to get past the door (a token, a client certificate).
 */
import { CoreV1Api } from "@kubernetes/client-node";
import { IDENTITY_OPENAPI_PATH } from "../../src/identity/index.js";
import { WEBHOOKS_OPENAPI_PATH } from "../../src/webhooks/index.js";
import { type TestEnvironment, testKubeConfig, uniqueName, webhookClientOf } from "../support/clusters.js";
import { createTestUser, sharedBuiltinIdentity } from "../support/identity.js";

export interface FuzzAccess {
  /** Sent with every request, e.g. `authorization: Bearer …`. */
  headers?: Record<string, string>;
  /** CA that signed the server's certificate (PEM); absent for plain HTTP. */
  caPem?: string;
  /** A client certificate, for endpoints that answer only one (kube-apiserver's reviews). */
  clientCert?: { certFile: string; keyFile: string };
}

export interface FuzzTarget {
  name: string;
  /** The URL of its OpenAPI document; undefined when this run does not serve the API (the reason is printed). */
  openapi(env: TestEnvironment): string | undefined;
  access(env: TestEnvironment): Promise<FuzzAccess>;
}

/** A token of a fresh built-in user in a tenant of their own, for APIs that want a logged-in user. */
async function userToken(): Promise<string> {
  const name = uniqueName("fuzz");
  const password = `${name}-password`;
  await createTestUser({ name, password, tenant: uniqueName("fuzzt"), tenantAdmin: true });
  return (await (await sharedBuiltinIdentity()).login({ username: name, password })).token;
}

export const FUZZ_TARGETS: FuzzTarget[] = [
  {
    name: "identity and access (login, logout, whoami, OIDC, TokenReview, SubjectAccessReview)",
    openapi: (env) => `${env.tenantry.accessUrl}${IDENTITY_OPENAPI_PATH}`,
    access: async (env) => ({
      headers: { authorization: `Bearer ${await userToken()}` },
      caPem: env.tenantry.accessCaPem,
      // The review endpoints answer only kube-apiserver's webhook client certificate.
      ...(env.tenantry.reviewClient ? { clientCert: env.tenantry.reviewClient } : {}),
    }),
  },
  {
    name: "admission webhooks (AdmissionReview)",
    openapi: (env) => `${env.tenantry.webhookUrl}${WEBHOOKS_OPENAPI_PATH}`,
    access: async () => {
      const secret = await testKubeConfig("home")
        .makeApiClient(CoreV1Api)
        .readNamespacedSecret({ name: "tenantry-webhook-tls", namespace: "tenantry-system" });
      // As kube-apiserver: anyone else is refused before the body is read, and nothing would be fuzzed.
      return {
        caPem: Buffer.from(secret.data!["ca.crt"]!, "base64").toString(),
        clientCert: webhookClientOf("home"),
      };
    },
  },
  {
    name: "runtimes Admin API",
    openapi: (env) =>
      env.tenantry.runtimesAdminUrl ? `${env.tenantry.runtimesAdminUrl}/services/openapi.json` : undefined,
    access: async () => ({ headers: { authorization: `Bearer ${await userToken()}` } }),
  },
];
