import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createCertificateAuthority } from "../pki/index.js";
import { capacityText, describeUserCa, nodeCapacity } from "./probe.js";

describe("nodeCapacity", () => {
  it("sums allocatable cpu, memory and pods over the nodes, in canonical quantities", () => {
    const capacity = nodeCapacity([
      { status: { allocatable: { cpu: "8", memory: "32Gi", pods: "110", "ephemeral-storage": "100Gi" } } },
      { status: { allocatable: { cpu: "500m", memory: "1024Mi", pods: "110" } } },
      { status: { capacity: { cpu: "1" } } },
    ]);
    assert.deepEqual(capacity, { cpu: "9500m", memory: "33Gi", pods: "220" });
    assert.equal(capacityText(capacity), "cpu=9500m, memory=33Gi, pods=220");
  });

  it("is empty for no nodes", () => {
    assert.deepEqual(nodeCapacity([]), {});
  });
});

describe("describeUserCa", () => {
  it("describes the bundle's first certificate and keeps the bundle", async () => {
    const ca = await createCertificateAuthority("cluster-ca");
    const described = describeUserCa(`${ca.certPem}\n${ca.certPem}`);
    assert.match(described.subject, /CN=cluster-ca/);
    assert.match(described.sha256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.ok(Date.parse(described.notAfter) > Date.now());
    assert.ok(described.pem.includes(ca.certPem.trim()));
  });

  it("refuses a bundle without a certificate", () => {
    assert.throws(() => describeUserCa("nothing here"), /no PEM certificate/);
  });
});
