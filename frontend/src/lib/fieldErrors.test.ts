import { describe, expect, it } from 'vitest';
import { mapFieldErrors, parentPath } from './fieldErrors';
import { emptyForm, emptyRequest, formSlots } from './planForm';

describe('parentPath', () => {
  it('strips one segment at a time', () => {
    expect(parentPath('requests[0].headers.X-Foo')).toBe('requests[0].headers');
    expect(parentPath('requests[0].headers')).toBe('requests[0]');
    expect(parentPath('requests[0]')).toBe('requests');
    expect(parentPath('thresholds[2]')).toBe('thresholds');
    expect(parentPath('load')).toBeNull();
    expect(parentPath('')).toBeNull();
  });
});

describe('mapFieldErrors', () => {
  const form = emptyForm();
  form.requests.push(emptyRequest());
  const slots = formSlots(form);

  it('puts a problem next to the input with the same path', () => {
    const m = mapFieldErrors({ 'load.vus': 'must be at least 1', 'requests[1].url': 'is required', name: 'is required' }, slots);
    expect(m.bySlot['load.vus']).toEqual([{ path: 'load.vus', message: 'must be at least 1' }]);
    expect(m.bySlot['requests[1].url']).toEqual([{ path: 'requests[1].url', message: 'is required' }]);
    expect(m.bySlot['name']).toHaveLength(1);
    expect(m.unmatched).toEqual([]);
  });

  it('falls back to the nearest enclosing input', () => {
    const m = mapFieldErrors(
      { 'thresholds[1]': 'bad', 'thresholds[0]': 'worse', 'requests[0].headers.X-A': 'bad name' },
      slots,
    );
    expect(m.bySlot['thresholds'].map((p) => p.path)).toEqual(['thresholds[0]', 'thresholds[1]']);
    expect(m.bySlot['requests[0].headers']).toEqual([{ path: 'requests[0].headers.X-A', message: 'bad name' }]);
  });

  it('lists problems without an input as unmatched', () => {
    const m = mapFieldErrors(
      {
        'load.vuz': 'unknown field',
        '': 'not valid JSON',
        'http.hosts': 'bad mapping',
        'requests[5].url': 'is required',
        'load.iterations': 'applies only to per-vu-iterations',
      },
      slots,
    );
    expect(m.unmatched.map((p) => p.path)).toEqual([
      '',
      'http.hosts',
      'load.iterations',
      'load.vuz',
      'requests[5].url',
    ]);
    expect(Object.keys(m.bySlot)).toEqual([]);
  });

  it('follows the executor: iterations has an input only for per-vu-iterations', () => {
    const f = emptyForm();
    f.executor = 'per-vu-iterations';
    const m = mapFieldErrors({ 'load.iterations': 'must be at least 1', 'load.duration': 'does not apply' }, formSlots(f));
    expect(m.bySlot['load.iterations']).toHaveLength(1);
    expect(m.unmatched.map((p) => p.path)).toEqual(['load.duration']);
  });

  it('copes with no fields at all', () => {
    expect(mapFieldErrors(undefined, slots)).toEqual({ bySlot: {}, unmatched: [] });
  });
});
