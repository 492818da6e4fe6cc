/**
 * Durable timers are records in agent documents; this service only holds the in-process alarms
 * that turn a stored `next_fire_at` into a fire call. Re-armed from the records after a restart,
 * so a due time missed while the runtime was down fires once on recovery.
 */
export class TimerAlarms {
  private readonly alarms = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly fire: (agentId: string, timerId: string, dueAt: string) => void,
    private readonly now: () => Date,
  ) {}

  arm(agentId: string, timerId: string, dueAt: string): void {
    this.disarm(agentId, timerId);
    const key = `${agentId}/${timerId}`;
    // setTimeout caps at ~24.8 days; a longer wait re-arms on the way.
    const delay = Math.min(Math.max(0, Date.parse(dueAt) - this.now().getTime()), 2 ** 31 - 1);
    const alarm = setTimeout(() => {
      this.alarms.delete(key);
      if (Date.parse(dueAt) - this.now().getTime() > 0) this.arm(agentId, timerId, dueAt);
      else this.fire(agentId, timerId, dueAt);
    }, delay);
    alarm.unref();
    this.alarms.set(key, alarm);
  }

  disarm(agentId: string, timerId: string): void {
    const key = `${agentId}/${timerId}`;
    const alarm = this.alarms.get(key);
    if (alarm) clearTimeout(alarm);
    this.alarms.delete(key);
  }

  /** Disarms every alarm of one agent (another node took it over, or it passivated in a cluster). */
  disarmAgent(agentId: string): void {
    const prefix = `${agentId}/`;
    for (const [key, alarm] of this.alarms) {
      if (!key.startsWith(prefix)) continue;
      clearTimeout(alarm);
      this.alarms.delete(key);
    }
  }

  disarmAll(): void {
    for (const alarm of this.alarms.values()) clearTimeout(alarm);
    this.alarms.clear();
  }
}
