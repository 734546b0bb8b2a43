// The plan an import produced, carried to the plan editor (#/plans/new), which opens it unsaved.
import type { PlanInput } from './types';

let pending: PlanInput | null = null;

export function setImported(plan: PlanInput): void {
  pending = plan;
}

/** takeImported returns the imported plan once (null when there is none). */
export function takeImported(): PlanInput | null {
  const p = pending;
  pending = null;
  return p;
}
