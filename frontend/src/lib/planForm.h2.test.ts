import { describe, expect, it } from 'vitest';
import { HTTP_VERSIONS, emptyForm, formSlots, formToPlan, planToForm } from './planForm';
import type { PlanSpec } from './types';

describe('planForm, http.version', () => {
  it('leaves version out by default, sends the chosen one, and keeps h2 options it has no input for', () => {
    const form = emptyForm();
    expect(formToPlan(form).http).not.toHaveProperty('version');
    form.httpVersion = '2';
    expect(formToPlan(form).http).toMatchObject({ version: '2' });
    expect(formSlots(form)).toContain('http.version');
    expect(HTTP_VERSIONS).toEqual(['', '1.1', '2', 'h2c']);

    const spec = {
      name: 'p',
      requests: [{ url: 'http://127.0.0.1:1/' }],
      load: { executor: 'constant-vus', vus: 1, duration: '1s' },
      http: { timeout: '10s', keep_alive: true, version: 'h2c', h2_connections: 4 },
      thresholds: [],
    } as unknown as PlanSpec;
    const loaded = planToForm(spec);
    expect(loaded.httpVersion).toBe('h2c');
    expect(formToPlan(loaded).http).toMatchObject({ version: 'h2c', h2_connections: 4 });
    loaded.httpVersion = '';
    expect(formToPlan(loaded).http).not.toHaveProperty('version');
  });
});
