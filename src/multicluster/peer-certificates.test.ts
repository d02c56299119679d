import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1CertificateSigningRequest } from "@kubernetes/client-node";
import { parse } from "yaml";
import { parseCertificateRequest } from "../identity/index.js";
import { kubeconfigYaml } from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import type { Tenant } from "../tenants/index.js";
import { PEER_CLUSTER_ID_LABEL, peerUsername } from "./peer.js";
import { findPeerTenant } from "./peer-certificate-approver.js";
import { withClientCertificate } from "./peer-certificate-renewer.js";
import {
  certificateSecondsOf,
  decidePeerCertificate,
  PEER_CERTIFICATE_SECONDS_ANNOTATION,
  PEER_RENEW_FRACTION_ANNOTATION,
  renewalSchedule,
  renewFractionOf,
} from "./peer-certificates.js";

const CLUSTER_ID = "7d3c1a52-0000-4000-8000-000000000001";
const USER = peerUsername(CLUSTER_ID);
const DAY = 24 * 3600;

function peerTenant(
  overrides: { owner?: string; clusterId?: string; seconds?: number; deleting?: boolean } = {},
): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: {
      name: "peer-edge-2",
      labels: { [PEER_CLUSTER_ID_LABEL]: overrides.clusterId ?? CLUSTER_ID },
      annotations: { [PEER_CERTIFICATE_SECONDS_ANNOTATION]: String(overrides.seconds ?? 30 * DAY) },
      ...(overrides.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: { owners: [{ kind: "User", name: overrides.owner ?? USER }] },
  } as Tenant;
}

async function csrFor(
  options: {
    cn?: string;
    groups?: string[];
    username?: string;
    signerName?: string;
    usages?: string[];
    expirationSeconds?: number | null;
    approved?: boolean;
  } = {},
) {
  const { csrPem } = await createCertificateRequest(options.cn ?? USER, options.groups ?? []);
  const csr: V1CertificateSigningRequest = {
    metadata: { name: "renewal" },
    spec: {
      request: Buffer.from(csrPem).toString("base64"),
      signerName: options.signerName ?? "kubernetes.io/kube-apiserver-client",
      usages: options.usages ?? ["client auth", "digital signature", "key encipherment"],
      username: options.username ?? USER,
      ...(options.expirationSeconds === null
        ? {}
        : { expirationSeconds: options.expirationSeconds ?? 30 * DAY }),
    },
    ...(options.approved
      ? { status: { conditions: [{ type: "Approved", status: "True", reason: "Someone", message: "" }] } }
      : {}),
  };
  return { csr, request: await parseCertificateRequest(csrPem) };
}

async function decide(options: Parameters<typeof csrFor>[0] = {}, tenants: Tenant[] = [peerTenant()]) {
  const { csr, request } = await csrFor(options);
  return decidePeerCertificate(csr, request, undefined, (u) => findPeerTenant(tenants, u), 30 * DAY);
}

describe("approving a peer's certificate renewal", () => {
  it("approves a request by a peer user of an existing peering tenant, for itself, client auth only, within the lifetime", async () => {
    const decision = await decide();
    assert.equal(decision.kind, "approve");
    assert.equal(decision.kind === "approve" && decision.tenant, "peer-edge-2");
    assert.match(decision.kind === "approve" ? decision.message : "", new RegExp(USER));
  });

  it("does not look at requests of other users, or requests already decided", async () => {
    assert.deepEqual(await decide({ username: "alice", cn: "alice" }), { kind: "ignore" });
    assert.deepEqual(await decide({ approved: true }), { kind: "ignore" });
  });

  const refusals: [string, Parameters<typeof csrFor>[0], Tenant[] | undefined, RegExp][] = [
    ["another signer", { signerName: "example.com/signer" }, undefined, /signerName "example.com\/signer"/],
    ["no peering tenant here", {}, [], /no peering tenant here is owned by tenantry-peer:/],
    ["a tenant of another cluster", {}, [peerTenant({ clusterId: "other" })], /no peering tenant/],
    ["a tenant owned by someone else", {}, [peerTenant({ owner: "mallory" })], /no peering tenant/],
    ["a tenant being deleted (unpeering)", {}, [peerTenant({ deleting: true })], /no peering tenant/],
    [
      "a CN other than the requester",
      { cn: "tenantry-peer:someone-else" },
      undefined,
      /subject CN: "tenantry-peer:someone-else" must be the username/,
    ],
    ["a group (O)", { groups: ["tenant-admins"] }, undefined, /subject O \(groups\): "tenant-admins"/],
    ["system:masters", { groups: ["system:masters"] }, undefined, /"system:masters" is a system: group/],
    [
      "server auth",
      { usages: ["client auth", "server auth"] },
      undefined,
      /usages: "server auth" is not allowed/,
    ],
    ["no client auth", { usages: ["digital signature"] }, undefined, /usages: must include "client auth"/],
    [
      "a longer lifetime than the peering's",
      { expirationSeconds: 3601 },
      [peerTenant({ seconds: 3600 })],
      /expirationSeconds: 3601 .* exceeds the maximum 3600/,
    ],
    [
      "no expirationSeconds (the signer's default)",
      { expirationSeconds: null },
      undefined,
      /expirationSeconds is not set/,
    ],
  ];
  for (const [what, options, tenants, reason] of refusals) {
    it(`leaves alone (never denies) a request with ${what}`, async () => {
      const decision = await decide(options, tenants);
      assert.equal(decision.kind, "refuse", JSON.stringify(decision));
      assert.match(decision.kind === "refuse" ? decision.reason : "", reason);
    });
  }

  it("leaves alone a request that does not parse, saying why", async () => {
    const { csr } = await csrFor();
    const decision = decidePeerCertificate(
      csr,
      undefined,
      "not a PEM certificate request",
      (u) => findPeerTenant([peerTenant()], u),
      30 * DAY,
    );
    assert.deepEqual(decision, {
      kind: "refuse",
      reason: "the request does not parse: not a PEM certificate request",
    });
  });

  it("reads the lifetime from the tenant's annotation, the default when absent, and refuses a broken one", () => {
    assert.equal(certificateSecondsOf(undefined, 99), 99);
    assert.equal(certificateSecondsOf({ [PEER_CERTIFICATE_SECONDS_ANNOTATION]: "600" }, 99), 600);
    for (const bad of ["", "10m", "-1", "0", "1.5"]) {
      assert.throws(
        () => certificateSecondsOf({ [PEER_CERTIFICATE_SECONDS_ANNOTATION]: bad }, 99),
        /annotation tenantry.dev\/peer-certificate-seconds: .* is not a whole number of seconds above 0/,
        bad,
      );
    }
  });
});

describe("when a peer certificate is renewed", () => {
  const notBefore = new Date("2026-11-01T00:00:00Z");
  const notAfter = new Date("2026-12-01T00:00:00Z");
  const at = (days: number) => new Date(notBefore.getTime() + days * DAY * 1000);

  it("is valid until a third of its lifetime is left, due after, expired at its end", () => {
    const fraction = renewFractionOf(undefined);
    assert.equal(renewalSchedule(notBefore, notAfter, at(1), fraction).state, "valid");
    assert.equal(renewalSchedule(notBefore, notAfter, at(19.9), fraction).state, "valid");
    assert.equal(renewalSchedule(notBefore, notAfter, at(20.1), fraction).state, "due");
    assert.equal(renewalSchedule(notBefore, notAfter, at(29.99), fraction).state, "due");
    assert.equal(renewalSchedule(notBefore, notAfter, at(30), fraction).state, "expired");
    assert.deepEqual(renewalSchedule(notBefore, notAfter, at(1), fraction).renewAt, at(20));
  });

  it("follows the Peering's fraction annotation, and refuses one out of (0, 1)", () => {
    const fraction = renewFractionOf({ [PEER_RENEW_FRACTION_ANNOTATION]: "0.99" });
    assert.equal(renewalSchedule(notBefore, notAfter, at(0.5), fraction).state, "due");
    for (const bad of ["0", "1", "-0.5", "abc", "", "2"]) {
      assert.throws(
        () => renewFractionOf({ [PEER_RENEW_FRACTION_ANNOTATION]: bad }),
        /annotation tenantry.dev\/certificate-renew-fraction: .* must be a number above 0 and below 1/,
        bad,
      );
    }
  });

  it("writes the new certificate and key into the kubeconfig and keeps its server and CA", () => {
    const before = kubeconfigYaml([
      {
        name: "home",
        cluster: { name: "home", server: "https://127.0.0.1:6443", caData: "Q0E=" },
        user: { name: "home-peer", certData: "b2xk", keyData: "b2xka2V5" },
      },
    ]);
    const after = parse(withClientCertificate(before, "NEW CERT", "NEW KEY"));
    const old = parse(before);
    assert.deepEqual(after.clusters, old.clusters);
    assert.deepEqual(after.contexts, old.contexts);
    assert.equal(after["current-context"], old["current-context"]);
    assert.equal(
      Buffer.from(after.users[0].user["client-certificate-data"], "base64").toString(),
      "NEW CERT",
    );
    assert.equal(Buffer.from(after.users[0].user["client-key-data"], "base64").toString(), "NEW KEY");
  });
});
