/**
 * The `simulated` provider of the embedded default. tenantry holds no simulation itself: the
 * machines are local processes that the local-cluster harness (src/localcluster/machines) starts,
 * each of which boots from its user data the way a cloud's virtual machine would and joins the
 * cluster with the bootstrap token inside it. The harness hands tenantry a LocalMachineHost, the
 * local interface below; this provider only translates between it and the SPI.
 */
import { type Flavor, type Machine, type MachineProvider, type MachineState, ProviderError } from "./spi.js";

/** A machine as the harness reports it. */
export interface LocalMachine {
  id: string;
  name: string;
  uid: string;
  clusterId: string;
  flavor: string;
  /** booting: started, not yet up; running: up (it joins from there); failed: it could not boot. */
  state: "booting" | "running" | "failed";
  /** The loopback address the machine answers on. */
  ipv4: string;
  message?: string;
}

/**
 * The local interface between tenantry and the harness's machine host. `launch` fails with a
 * message for people when it cannot (an unknown flavor, no room left); a machine whose process
 * ends without `stop` is gone, as a deleted virtual machine is.
 */
export interface LocalMachineHost {
  flavors(): Flavor[];
  launch(spec: {
    name: string;
    uid: string;
    clusterId: string;
    flavor: string;
    userData: string;
  }): Promise<LocalMachine>;
  get(name: string): LocalMachine | undefined;
  list(): LocalMachine[];
  stop(name: string): Promise<void>;
  /** Calls `listener` with the machine's name whenever one changes state or goes. */
  onChange(listener: (name: string) => void): () => void;
}

const STATES: Record<LocalMachine["state"], { state: MachineState; status: string }> = {
  booting: { state: "Building", status: "BUILD" },
  running: { state: "Active", status: "ACTIVE" },
  failed: { state: "Error", status: "ERROR" },
};

function toMachine(local: LocalMachine): Machine {
  return {
    id: local.id,
    name: local.name,
    uid: local.uid,
    clusterId: local.clusterId,
    ...STATES[local.state],
    // As a cloud's, the address shows once the machine runs.
    addresses: local.state === "booting" ? [] : [local.ipv4],
    ...(local.message ? { message: local.message } : {}),
  };
}

export class SimulatedProvider implements MachineProvider {
  readonly type = "simulated";

  constructor(private readonly host: LocalMachineHost) {}

  async listFlavors(): Promise<Flavor[]> {
    return this.host.flavors();
  }

  async createMachine(request: Parameters<MachineProvider["createMachine"]>[0]): Promise<Machine> {
    if (!this.host.flavors().some((f) => f.name === request.flavor)) {
      throw new ProviderError(`flavor "${request.flavor}" does not exist`, true, 400);
    }
    try {
      return toMachine(
        await this.host.launch({
          name: request.name,
          uid: request.uid,
          clusterId: request.clusterId,
          flavor: request.flavor,
          userData: request.userData,
        }),
      );
    } catch (err) {
      throw new ProviderError((err as Error).message, true);
    }
  }

  async findMachine(owner: Parameters<MachineProvider["findMachine"]>[0]): Promise<Machine | undefined> {
    const local = this.host.get(owner.name);
    return local && local.uid === owner.uid && local.clusterId === owner.clusterId
      ? toMachine(local)
      : undefined;
  }

  async listMachines(clusterId: string): Promise<Machine[]> {
    return this.host
      .list()
      .filter((m) => m.clusterId === clusterId)
      .map(toMachine);
  }

  async deleteMachine(machine: Pick<Machine, "id" | "name">): Promise<void> {
    const local = this.host.get(machine.name);
    if (local && local.id === machine.id) await this.host.stop(machine.name);
  }

  watch(listener: (name: string) => void): () => void {
    return this.host.onChange(listener);
  }
}
