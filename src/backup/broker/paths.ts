/** The broker's route on the runtimes Admin API (shared by the broker and the agent). */
export const PRESIGN_PATH = "/backup-agent/v1/presign";
