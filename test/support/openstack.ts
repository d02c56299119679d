/**
 * A real OpenStack compute API for the openstack node provider's tests: Nova (API, conductor,
 * scheduler, and a compute service with the fake virtualization driver), Placement, Glance and
 * Neutron from Debian's packages, on MariaDB and RabbitMQ, with the Keystone of ./keystone.ts.
 * Everything listens on 127.0.0.1; each daemon is started directly (no systemd) and stopped by its
 * process group.
 */
import { type DebianInstall, ensureDebianPackages } from "./debian.js";
import { KEYSTONE_INSTALL } from "./keystone.js";

const DIST = "/usr/lib/python3/dist-packages";

export const OPENSTACK_INSTALL: DebianInstall = {
  label: "openstack",
  packages: [
    ...KEYSTONE_INSTALL.packages,
    "mariadb-server",
    "python3-pymysql",
    "rabbitmq-server",
    "placement-api",
    "glance-api",
    "neutron-server",
    "nova-api",
    "nova-conductor",
    "nova-scheduler",
  ],
  provides: [
    ...KEYSTONE_INSTALL.provides,
    "/usr/sbin/mariadbd",
    "/usr/sbin/rabbitmq-server",
    "/usr/bin/placement-api",
    "/usr/bin/glance-api",
    "/usr/bin/neutron-server",
    "/usr/bin/nova-api",
    "/usr/bin/nova-conductor",
    "/usr/bin/nova-scheduler",
    `${DIST}/nova/virt/fake.py`,
  ],
  // The packages would otherwise offer to create databases, users and endpoints themselves.
  preseed: ["nova", "novaapi", "glance", "neutron", "placement"].flatMap((p) => [
    `${p === "novaapi" ? "nova-api" : `${p}-common`} ${p}/configure_db boolean false`,
  ]),
  noDaemons: true,
  expect: "about 360 packages, 2 minutes",
};

/** Installs the OpenStack services from Debian's packages unless they are there. */
export function ensureOpenStackInstalled(): Promise<void> {
  return ensureDebianPackages(OPENSTACK_INSTALL);
}
