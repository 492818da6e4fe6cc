/** Each agent's last committed version as a benchmark tracks it (`null`: not created yet). */
export class Versions {
  private readonly map = new Map<string, number | null>();
  get(id: string): number | null {
    return this.map.get(id) ?? null;
  }
  set(id: string, version: number): void {
    this.map.set(id, version);
  }
}
