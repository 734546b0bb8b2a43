// Starting a run from the plans list or the editor, with the 409 case resolved to the active run.
import { activeRun, api, ApiError, errorMessage } from './api';
import type { Run } from './types';

export type StartResult = { ok: true; run: Run } | { ok: false; message: string; activeRunId?: number };

export async function startRun(planId: number | string): Promise<StartResult> {
  try {
    const run = await api.startRun(planId);
    return { ok: true, run };
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) {
      const active = await activeRun();
      return { ok: false, message: err.message, activeRunId: active?.id };
    }
    return { ok: false, message: errorMessage(err) };
  }
}

export function isActive(status: string | undefined): boolean {
  return status === 'running';
}
