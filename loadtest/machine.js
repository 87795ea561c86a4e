import os from 'node:os'

/** The machine the load test ran on, for the report: results only compare on the same hardware. */
export function describeMachine () {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGB: Math.round(os.totalmem() / 1024 ** 3 * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: os.loadavg().map(load => Math.round(load * 100) / 100)
  }
}
