import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { UserError } from "../common/index.js";
import { CLIENT_USAGES } from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import {
  type CertificateRequestSummary,
  checkCertificatePolicy,
  checkUsername,
  classifyExpiry,
  formatDuration,
  keyMatchesRequest,
  parseCertificateRequest,
  parseDuration,
} from "./user-certificates.js";

const DAY = 86400;

const stub: CertificateRequestSummary = {
  pem: "",
  commonNames: ["alice"],
  groups: [],
  requestedUsages: [],
  requestsCa: false,
  alternativeNames: [],
  publicKeySpki: new Uint8Array(),
};

async function request(commonName: string, groups: string[] = []): Promise<CertificateRequestSummary> {
  return parseCertificateRequest((await createCertificateRequest(commonName, groups)).csrPem);
}

function refusal(fn: () => void, ...fragments: string[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof UserError, `a UserError, got ${err}`);
    for (const fragment of fragments)
      assert.ok(err.message.includes(fragment), `"${fragment}" in: ${err.message}`);
    return true;
  });
}

const wanted = (overrides: { username?: string; expirationSeconds?: number; usages?: string[] } = {}) => ({
  username: "alice",
  expirationSeconds: 7 * DAY,
  usages: [...CLIENT_USAGES],
  ...overrides,
});

describe("approval policy", () => {
  it("approves CN = username with allowed groups, client usages, a lifetime within the maximum", async () => {
    const csr = await request("alice", ["devs"]);
    checkCertificatePolicy(csr, wanted(), { allowedGroups: ["devs", "ops"] });
    checkCertificatePolicy(await request("alice"), wanted({ expirationSeconds: 600 }), { allowedGroups: [] });
    checkCertificatePolicy(csr, wanted({ expirationSeconds: 30 * DAY }), { allowedGroups: ["devs"] });
    checkCertificatePolicy(csr, wanted({ usages: ["client auth"] }), { allowedGroups: ["devs"] });
  });

  it("refuses a CN other than the username", async () => {
    refusal(
      () => checkCertificatePolicy({ ...stub, commonNames: ["bob"] }, wanted(), { allowedGroups: [] }),
      'subject CN: "bob" must be the username "alice"',
    );
    refusal(
      () =>
        checkCertificatePolicy({ ...stub, commonNames: ["alice", "bob"] }, wanted(), { allowedGroups: [] }),
      "subject CN: must be exactly one",
      "found 2",
    );
  });

  it("refuses system:masters and every system: group, even when listed as allowed", async () => {
    const csr = await request("alice", ["system:masters"]);
    refusal(
      () => checkCertificatePolicy(csr, wanted(), { allowedGroups: ["system:masters"] }),
      'subject O (groups): "system:masters" is a system: group',
    );
    refusal(
      () => checkCertificatePolicy({ ...stub, groups: ["system:nodes"] }, wanted(), { allowedGroups: [] }),
      '"system:nodes" is a system: group',
    );
  });

  it("refuses groups not allowed for the user, naming the allowed ones", async () => {
    const csr = await request("alice", ["devs", "admins"]);
    refusal(
      () => checkCertificatePolicy(csr, wanted(), { allowedGroups: ["devs", "ops"] }),
      'subject O (groups): "admins" is not a group allowed for alice (allowed: "devs", "ops")',
    );
    refusal(() => checkCertificatePolicy(csr, wanted(), { allowedGroups: [] }), "(allowed: none)");
  });

  it("refuses usages other than client authentication, requested or in the request's extensions", () => {
    refusal(
      () =>
        checkCertificatePolicy(stub, wanted({ usages: ["client auth", "server auth"] }), {
          allowedGroups: [],
        }),
      'usages: "server auth" is not allowed; only client auth, digital signature, key encipherment',
    );
    refusal(
      () => checkCertificatePolicy(stub, wanted({ usages: ["digital signature"] }), { allowedGroups: [] }),
      'usages: must include "client auth"',
    );
    refusal(
      () =>
        checkCertificatePolicy({ ...stub, requestedUsages: ["cert sign"] }, wanted(), { allowedGroups: [] }),
      'usages: "cert sign" is not allowed',
    );
    refusal(
      () => checkCertificatePolicy({ ...stub, requestsCa: true }, wanted(), { allowedGroups: [] }),
      "basicConstraints asks for a CA certificate",
    );
    refusal(
      () =>
        checkCertificatePolicy({ ...stub, alternativeNames: ["dns:api.example.com"] }, wanted(), {
          allowedGroups: [],
        }),
      "subjectAltName dns:api.example.com is not allowed",
    );
  });

  it("refuses lifetimes over the maximum (30 days unless configured) or under 10 minutes", () => {
    refusal(
      () => checkCertificatePolicy(stub, wanted({ expirationSeconds: 31 * DAY }), { allowedGroups: [] }),
      "expirationSeconds: 2678400 (31d) exceeds the maximum 2592000 (30d)",
    );
    refusal(
      () =>
        checkCertificatePolicy(stub, wanted({ expirationSeconds: 2 * DAY }), {
          allowedGroups: [],
          maxExpirationSeconds: DAY,
        }),
      "exceeds the maximum 86400 (1d)",
    );
    refusal(
      () => checkCertificatePolicy(stub, wanted({ expirationSeconds: 599 }), { allowedGroups: [] }),
      "expirationSeconds: 599 (9m59s) is below the minimum 600 (10m)",
    );
  });

  it("names every violation at once", async () => {
    const csr = await request("mallory", ["system:masters"]);
    refusal(
      () => checkCertificatePolicy(csr, wanted({ expirationSeconds: 90 * DAY }), { allowedGroups: [] }),
      "subject CN",
      "system:masters",
      "expirationSeconds",
    );
  });

  it("refuses usernames the cluster reserves, or that a certificate subject cannot carry", () => {
    refusal(() => checkUsername("system:kube-controller-manager"), 'names starting with "system:"');
    refusal(() => checkUsername("alice,O=system:masters"), "without spaces or any of");
    checkUsername("alice@example.org");
  });
});

describe("certificate requests", () => {
  it("reads CN, groups and key; matches a key to its request", async () => {
    const { csrPem, keyPem } = await createCertificateRequest("alice", ["devs", "ops"]);
    const csr = await parseCertificateRequest(csrPem);
    assert.deepEqual(csr.commonNames, ["alice"]);
    assert.deepEqual(csr.groups, ["devs", "ops"]);
    assert.deepEqual(csr.requestedUsages, []);
    assert.equal(csr.requestsCa, false);
    assert.ok(keyMatchesRequest(keyPem, csr));
    const other = await createCertificateRequest("alice");
    assert.equal(keyMatchesRequest(other.keyPem, csr), false);
  });

  it("refuses what is not a PEM certificate request", async () => {
    await assert.rejects(parseCertificateRequest("hello"), UserError);
  });
});

describe("expiry", () => {
  const notBefore = new Date("2025-01-01T00:00:00Z");
  const notAfter = new Date("2025-01-11T00:00:00Z"); // 10 days
  const at = (iso: string) => classifyExpiry(notBefore, notAfter, new Date(iso));

  it("is valid until the last 20 % of the lifetime, then renew soon, then expired", () => {
    assert.equal(at("2025-01-02T00:00:00Z").state, "valid");
    assert.equal(at("2025-01-08T23:59:00Z").state, "valid");
    assert.equal(at("2025-01-09T00:00:00Z").state, "renew soon");
    assert.equal(at("2025-01-10T23:59:59Z").state, "renew soon");
    assert.equal(at("2025-01-11T00:00:00Z").state, "expired");
    assert.equal(at("2024-12-31T00:00:00Z").state, "not yet valid");
  });

  it("reports lifetime and remaining seconds", () => {
    const status = at("2025-01-10T00:00:00Z");
    assert.equal(status.lifetimeSeconds, 10 * DAY);
    assert.equal(status.remainingSeconds, DAY);
    assert.equal(at("2025-01-12T00:00:00Z").remainingSeconds, -DAY);
  });
});

describe("durations", () => {
  it("parses and formats", () => {
    assert.equal(parseDuration("10m"), 600);
    assert.equal(parseDuration("1h"), 3600);
    assert.equal(parseDuration("7d"), 7 * DAY);
    assert.equal(parseDuration("1d12h"), 36 * 3600);
    assert.equal(parseDuration("2w"), 14 * DAY);
    for (const bad of ["", "7", "1y", "h1", "1.5h"]) assert.throws(() => parseDuration(bad), UserError, bad);
    assert.equal(formatDuration(30 * DAY), "30d");
    assert.equal(formatDuration(7 * DAY - 60), "6d23h");
    assert.equal(formatDuration(3599), "59m59s");
    assert.equal(formatDuration(0), "0s");
    assert.equal(formatDuration(-90), "-1m30s");
  });
});
