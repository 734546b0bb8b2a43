import { describe, expect, it } from 'vitest';
import { leave, navigate, parseHash, router, setLeaveGuard } from './router.svelte';

describe('parseHash', () => {
  it('maps the documented routes', () => {
    expect(parseHash('')).toEqual({ name: 'plans' });
    expect(parseHash('#/')).toEqual({ name: 'plans' });
    expect(parseHash('#/plans')).toEqual({ name: 'plans' });
    expect(parseHash('#/plans/new')).toEqual({ name: 'plan-new' });
    expect(parseHash('#/plans/12')).toEqual({ name: 'plan-edit', id: '12' });
    expect(parseHash('#/runs/7')).toEqual({ name: 'run', id: '7' });
    expect(parseHash('#/secrets')).toEqual({ name: 'secrets' });
    expect(parseHash('#/agents')).toEqual({ name: 'agents' });
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

describe('leave guard', () => {
  /** change runs fn, which changes the hash, and waits for its hashchange (the router's listener, added first, has run). */
  const change = (fn: () => void) => {
    const seen = new Promise((r) => window.addEventListener('hashchange', r, { once: true }));
    fn();
    return seen;
  };

  it('holds the page and puts the URL back while the guard says so; leave goes on', async () => {
    await change(() => navigate('/plans/new'));
    expect(router.route.name).toBe('plan-new');
    const asked: string[] = [];
    const off = setLeaveGuard((to) => {
      asked.push(to);
      return true;
    });
    await change(() => navigate('/runs'));
    expect(asked).toEqual(['#/runs']);
    expect(router.route.name).toBe('plan-new');
    expect(location.hash).toBe('#/plans/new');
    await change(() => leave(asked[0]));
    expect(router.route.name).toBe('runs');
    off(); // already removed by leave: a no-op
    expect(router.guard).toBeNull();
  });

  it('a guard that lets go changes nothing', async () => {
    const off = setLeaveGuard(() => false);
    await change(() => navigate('/compare'));
    expect(router.route.name).toBe('compare');
    off();
    expect(router.guard).toBeNull();
  });
});
