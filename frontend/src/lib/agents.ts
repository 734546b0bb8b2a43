// Runs over agents (volley serve --agents-listen): the start form's choice of generators and the
// run view's per-agent figures and missing shares, folded from the merged seconds (Sample.agents,
// missing_share, missing_agents; docs/api.md "Runs over agents").
import type { Agent, Sample } from './types';

/** The API's bounds on a run's generators (api.MaxRunAgents, MaxAgentLabels). */
export const MAX_RUN_AGENTS = 1000;
export const MAX_AGENT_LABELS = 20;

/** Who generates a run's load: this server's engine, N idle agents, or every idle agent with these labels. */
export type Generators = { kind: 'local' } | { kind: 'agents'; n: number } | { kind: 'labels'; text: string };

/** The body of POST /api/plans/:id/runs for g (undefined: no body, a local run). */
export type StartBody = { agents: number } | { agent_labels: Record<string, string> };

/**
 * parseLabels reads "k=v,k=v" (spaces around items ignored) into labels, or gives the i18n key of
 * what is wrong with it.
 */
export function parseLabels(text: string): { labels: Record<string, string> } | { error: string } {
  const labels: Record<string, string> = {};
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) return { error: 'generators.labelsEmpty' };
  for (const kv of items) {
    const i = kv.indexOf('=');
    if (i <= 0) return { error: 'generators.labelsInvalid' };
    labels[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  if (Object.keys(labels).length > MAX_AGENT_LABELS) return { error: 'generators.labelsTooMany' };
  return { labels };
}

/** startBody is g as the API takes it (body undefined: a local run), or the i18n key of what is wrong with it. */
export function startBody(g: Generators): { body?: StartBody } | { error: string } {
  switch (g.kind) {
    case 'local':
      return {};
    case 'agents':
      if (!Number.isInteger(g.n) || g.n < 1 || g.n > MAX_RUN_AGENTS) return { error: 'generators.countInvalid' };
      return { body: { agents: g.n } };
    case 'labels': {
      const l = parseLabels(g.text);
      return 'error' in l ? l : { body: { agent_labels: l.labels } };
    }
  }
}

/** idleMatching is the idle agents carrying every one of labels (all idle agents without labels). */
export function idleMatching(agents: readonly Agent[], labels?: Record<string, string>): Agent[] {
  return agents.filter((a) => a.state === 'idle' && Object.entries(labels ?? {}).every(([k, v]) => a.labels?.[k] === v));
}

/** One agent's generator figures over the seconds seen. */
export interface AgentRow {
  id: string;
  seconds: number;
  /** missingSince: the first second of the agent's current absence (its share missing in every
   * second since, up to the latest one); 0 while it delivers. Its CPU "now" is then unknown. */
  missingSince: number;
  cpuLast: number;
  cpuAvg: number;
  cpuMax: number;
  rssMax: number;
}

/** A second whose work is partly missing (an agent delivered nothing for it). */
export interface MissingSecond {
  second: number;
  share: number;
  agents: string[];
}

/** AgentsStore folds the merged seconds of a run over agents; push returns whether it changed. */
export class AgentsStore {
  rows = new Map<string, AgentRow & { cpuSum: number }>();
  missing: MissingSecond[] = [];
  latest = 0; // the latest second pushed

  /** any: the run is over agents (some second named an agent). */
  get any(): boolean {
    return this.rows.size > 0 || this.missing.length > 0;
  }

  reset(): void {
    this.rows = new Map();
    this.missing = [];
    this.latest = 0;
  }

  push(s: Sample): boolean {
    let changed = false;
    for (const [id, c] of Object.entries(s.agents ?? {})) {
      let r = this.rows.get(id);
      if (!r) {
        r = { id, seconds: 0, missingSince: 0, cpuLast: 0, cpuAvg: 0, cpuMax: 0, rssMax: 0, cpuSum: 0 };
        this.rows.set(id, r);
      }
      const cpu = c.cpu_percent ?? 0;
      r.seconds++;
      r.missingSince = 0;
      r.cpuLast = cpu;
      r.cpuSum += cpu;
      r.cpuAvg = r.cpuSum / r.seconds;
      r.cpuMax = Math.max(r.cpuMax, cpu);
      r.rssMax = Math.max(r.rssMax, c.rss_bytes ?? 0);
      changed = true;
    }
    if (s.elapsed_s >= this.latest) {
      // The latest second says who is missing now (an earlier second replayed says nothing new).
      this.latest = s.elapsed_s;
      for (const id of s.missing_agents ?? []) {
        if (s.agents?.[id]) continue;
        let r = this.rows.get(id);
        if (!r) {
          r = { id, seconds: 0, missingSince: 0, cpuLast: 0, cpuAvg: 0, cpuMax: 0, rssMax: 0, cpuSum: 0 };
          this.rows.set(id, r);
        }
        if (r.missingSince === 0) {
          r.missingSince = s.elapsed_s;
          changed = true;
        }
      }
    }
    if ((s.missing_share ?? 0) > 0 && !this.missing.some((m) => m.second === s.elapsed_s)) {
      this.missing.push({ second: s.elapsed_s, share: s.missing_share ?? 0, agents: [...(s.missing_agents ?? [])] });
      changed = true;
    }
    return changed;
  }

  /**
   * The agents by id: copies, so a keyed {#each} re-renders a row whose figures changed (push
   * updates the rows in place, and Svelte skips an item that is the same object as before).
   */
  get list(): AgentRow[] {
    return [...this.rows.values()].map((r) => ({ ...r })).sort((a, b) => a.id.localeCompare(b.id));
  }
}
