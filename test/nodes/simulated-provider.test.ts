import { mkdtempSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MachineHost } from "../../src/localcluster/index.js";
import { SimulatedProvider } from "../../src/nodes/index.js";
import { testKubeConfig } from "../support/clusters.js";
import { machineProviderConformance } from "./provider-conformance.js";

const host = new MachineHost({ dir: mkdtempSync(join(tmpdir(), "tenantry-machines-")) });

machineProviderConformance("simulated", () => ({
  provider: new SimulatedProvider(host),
  flavor: "m1.small",
  reportsAddresses: true,
  cluster: testKubeConfig("home"),
  timeoutMs: 60_000,
  async userDataOf(machine) {
    const spec = JSON.parse(await readFile(join(host.folder(machine.name), "spec.json"), "utf8")) as {
      userData: string;
    };
    return spec.userData;
  },
  async tearDown() {
    host.close();
    await host.stopAll();
  },
}));
