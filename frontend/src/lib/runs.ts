// Starting a run from the plans list or the editor, with the 409 case resolved to the active run.
import { activeRun, api, ApiError, errorMessage } from './api';
import type { StartBody } from './agents';
import type { Run } from './types';

export type StartResult = { ok: true; run: Run } | { ok: false; message: string; activeRunId?: number };

/** startRun starts plan planId on this server, or on the agents body names (409s say why not: another run, no listener, too few agents). */
export async function startRun(planId: number | string, body?: StartBody): Promise<StartResult> {
  try {
    const run = await api.startRun(planId, body);
    return { ok: true, run };
  } catch (err) {
    if (err instanceof ApiError && err.status === 409 && !err.code.startsWith('agents_')) {
      const active = await activeRun();
      return { ok: false, message: err.message, activeRunId: active?.id };
    }
    return { ok: false, message: errorMessage(err) };
  }
}

export function isActive(status: string | undefined): boolean {
  return status === 'running';
}
