import { describe, expect, it } from 'vitest';
import { COMPRESSIONS, COOKIE_MODES, EXTRACT_ARG, EXTRACT_ARG_HINT, EXTRACT_FROM, emptyForm, formSlots, formToPlan, planToForm, rowToExtract, toggleCompression } from './planForm';
import { en } from './locales/en';
import { zhCN } from './locales/zh-CN';
import type { PlanInput } from './types';

// http.cookies, http.compression and the cookie extraction in the plan editor's form.
describe('sessions and compression in the form', () => {
  it('a new form sends neither option; a set one is sent', () => {
    const form = emptyForm();
    expect(form.cookies).toBe('vu');
    expect(formToPlan(form).http).toEqual({ timeout: '10s', keep_alive: true });
    form.cookies = 'iteration';
    toggleCompression(form, 'br', true);
    toggleCompression(form, 'gzip', true);
    expect(formToPlan(form).http).toEqual({ timeout: '10s', keep_alive: true, cookies: 'iteration', compression: ['br', 'gzip'] });
    toggleCompression(form, 'br', false);
    form.cookies = 'vu';
    expect(formToPlan(form).http).toEqual({ timeout: '10s', keep_alive: true, compression: ['gzip'] });
  });

  it('a loaded plan keeps its options, defaults and order included, after the other http keys', () => {
    const spec: PlanInput = {
      name: 'p',
      requests: [{ url: 'http://127.0.0.1:1/', extract: [{ var: 'sid', from: 'cookie', name: 'SESSION' }] }],
      load: { executor: 'constant-vus', vus: 1, duration: '1s' },
      http: { timeout: '10s', keep_alive: true, max_body: 2048, cookies: 'vu', compression: ['zstd', 'gzip'] },
      thresholds: [],
    };
    const form = planToForm(spec);
    expect(form.cookies).toBe('vu');
    expect(form.compression).toEqual(['zstd', 'gzip']);
    const http = formToPlan(form).http;
    expect(http).toEqual(spec.http);
    expect(Object.keys(http)).toEqual(['timeout', 'keep_alive', 'max_body', 'cookies', 'compression']);
    expect(form.requests[0].extract[0]).toMatchObject({ var: 'sid', from: 'cookie', arg: 'SESSION' });
    expect(rowToExtract(form.requests[0].extract[0])).toEqual({ var: 'sid', from: 'cookie', name: 'SESSION' });
    form.compression = [];
    expect(formToPlan(form).http.compression).toEqual([]);
  });

  it('offers what the server accepts, with labels in both languages', () => {
    expect([...COOKIE_MODES]).toEqual(['vu', 'iteration', 'off']);
    expect([...COMPRESSIONS]).toEqual(['gzip', 'deflate', 'br', 'zstd']);
    expect(EXTRACT_FROM).toContain('cookie');
    expect(EXTRACT_ARG.cookie).toBe('name');
    expect(EXTRACT_ARG_HINT.cookie).toBeTruthy();
    for (const m of COOKIE_MODES) {
      const key = `editor.cookies.${m}` as keyof typeof en;
      expect(en[key]).toBeTruthy();
      expect(zhCN[key]).toBeTruthy();
    }
    expect(formSlots(emptyForm())).toEqual(expect.arrayContaining(['http.cookies', 'http.compression']));
  });
});
