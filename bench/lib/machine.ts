import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

export interface MachineInfo {
  cpu: string;
  cores: number;
  node: string;
  platform: string;
  memory_gib: number;
  /** 1-minute load average when the benchmark started: these machines are shared. */
  load_1m: number;
}

/** The CPU model as /proc/cpuinfo names it (os.cpus() elsewhere). */
function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    const model = line?.split(':')[1]?.trim();
    if (model) return model;
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return cpus()[0]?.model ?? 'unknown';
}

export function machineInfo(): MachineInfo {
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    load_1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

export function describeMachine(info: MachineInfo = machineInfo()): string {
  return `${info.cpu} × ${info.cores} cores, ${info.memory_gib} GiB, Node ${info.node} (${info.platform}), load ${info.load_1m}`;
}
