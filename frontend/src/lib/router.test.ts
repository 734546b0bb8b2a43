import { describe, expect, it } from 'vitest';
import { parseHash } from './router.svelte';

describe('parseHash', () => {
  it('maps the documented routes', () => {
    expect(parseHash('')).toEqual({ name: 'plans' });
    expect(parseHash('#/')).toEqual({ name: 'plans' });
    expect(parseHash('#/plans')).toEqual({ name: 'plans' });
    expect(parseHash('#/plans/new')).toEqual({ name: 'plan-new' });
    expect(parseHash('#/plans/12')).toEqual({ name: 'plan-edit', id: '12' });
    expect(parseHash('#/runs/7')).toEqual({ name: 'run', id: '7' });
    expect(parseHash('#/secrets')).toEqual({ name: 'secrets' });
    const r = parseHash('#/runs?plan_id=3&offset=25');
    expect(r.name).toBe('runs');
    if (r.name === 'runs') {
      expect(r.query.get('plan_id')).toBe('3');
      expect(r.query.get('offset')).toBe('25');
    }
  });

  it('reports unknown paths', () => {
    expect(parseHash('#/plans/abc')).toEqual({ name: 'not-found', path: '/plans/abc' });
    expect(parseHash('#/nope')).toEqual({ name: 'not-found', path: '/nope' });
  });
});
