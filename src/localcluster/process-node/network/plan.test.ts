import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PodAddresses } from "./addresses.js";
import { Cidr } from "./cidr.js";
import { mappedAddress, networkPlan, podBridgePort, podNamespace, podNetworkId } from "./plan.js";

describe("pod network plan", () => {
  test("prefixes parse, contain, count and refuse host bits", () => {
    const cidr = Cidr.parse("10.200.7.0/24");
    assert.equal(cidr.size, 256);
    assert.equal(cidr.at(1), "10.200.7.1");
    assert.equal(cidr.indexOf("10.200.7.9"), 9);
    assert.equal(cidr.indexOf("10.200.8.9"), -1);
    assert.ok(cidr.overlaps(Cidr.parse("10.200.0.0/16")));
    assert.ok(!cidr.overlaps(Cidr.parse("10.201.0.0/16")));
    assert.throws(() => Cidr.parse("10.200.7.1/24"), /host bits set \(the prefix is 10\.200\.7\.0\/24\)/);
    assert.throws(() => Cidr.parse("10.200.7.0"), /not an IPv4 prefix/);
  });

  test("a network index gives every name and address; the pod CIDR must be a /24", () => {
    const plan = networkPlan(7);
    assert.deepEqual(plan, {
      index: 7,
      podCidr: "10.200.7.0/24",
      gateway: "10.200.7.1",
      mappedCidr: "198.18.7.0/24",
      hostAddress: "198.19.7.1",
      nodeAddress: "198.19.7.2",
      nodeNamespace: "tnr7-node",
      hostLink: "tnr7h",
      hostTable: "tenantry-net-7",
    });
    assert.equal(networkPlan(9, "10.244.0.0/24").podCidr, "10.244.0.0/24");
    assert.throws(() => networkPlan(9, "10.244.0.0/16"), /must be a \/24/);
    assert.throws(() => networkPlan(0), /network index 0 is not from 1 to 250/);
    assert.equal(mappedAddress(networkPlan(9, "10.244.0.0/24"), "10.244.0.5"), "198.18.9.5");
    assert.equal(mappedAddress(plan, "10.244.0.5"), undefined);
    const id = podNetworkId("0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0");
    assert.equal(id, "0b1c2d3e");
    assert.equal(podNamespace(plan, id), "tnr7-0b1c2d3e");
    assert.ok(podBridgePort(id).length <= 15, "interface names are at most 15 bytes");
  });

  test("addresses go round the podCIDR, skipping the network, the bridge's and the broadcast address", () => {
    const addresses = new PodAddresses("10.200.7.0/24");
    assert.equal(addresses.capacity, 253);
    addresses.reserve("10.200.7.3");
    addresses.reserve("10.200.8.3");
    assert.equal(addresses.allocate(), "10.200.7.2");
    assert.equal(addresses.allocate(), "10.200.7.4");
    addresses.release("10.200.7.2");
    assert.equal(addresses.allocate(), "10.200.7.5");
    const resumed = new PodAddresses("10.200.7.0/24", addresses.cursor());
    assert.equal(resumed.allocate(), "10.200.7.6");
    assert.ok(!addresses.contains("10.200.7.1"));
    assert.ok(!addresses.contains("10.200.7.255"));
    const full = new PodAddresses("10.200.7.0/24");
    for (let i = 0; i < 253; i++) full.allocate();
    assert.throws(() => full.allocate(), /every address of 10\.200\.7\.0\/24 is in use/);
    full.release("10.200.7.254");
    assert.equal(full.allocate(), "10.200.7.254");
  });
});
