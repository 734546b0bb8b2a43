// Messages the UI makes itself (not the server's) follow the chosen language.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, errorMessage, request } from './api';
import { setLocale } from './i18n.svelte';
import { checkValueIssue, csvPreview, emptyCheck } from './planForm';

afterEach(() => {
  setLocale('en');
  vi.unstubAllGlobals();
});

const han = /[\u4e00-\u9fff]/;

describe('UI-made messages in the Chinese UI', () => {
  it('CSV data problems', () => {
    setLocale('zh-CN');
    for (const text of ['user\n', 'a,b\n1\n', 'a b,c\n1,2\n', 'a,b\n"1,2\n', 'a,b\n1"x,2\n', 'a,b\n"1"x,2\n']) {
      const p = csvPreview(text).problem;
      expect(p, text).toMatch(han);
      expect(p, text).not.toMatch(/\b(line|row|column|needs|quoted)\b/);
    }
    expect(csvPreview('a,b\n1\n').problem).toBe('第 1 行有 1 个字段，表头有 2 个');
  });

  it("a check value's warning", () => {
    setLocale('zh-CN');
    expect(checkValueIssue({ ...emptyCheck('json'), valueType: 'number', value: 'abc' })).toMatch(han);
    expect(checkValueIssue({ ...emptyCheck('json'), valueType: 'json', value: '{' })).toMatch(han);
  });

  it('an unreachable server and a body that is not JSON', async () => {
    setLocale('zh-CN');
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => {
        throw new TypeError('Failed to fetch');
      }),
    );
    expect(errorMessage(await api.listRuns().catch((e) => e))).toMatch(/^无法连接 Volley 服务器（GET \/api\/runs）：Failed to fetch$/);
    vi.stubGlobal('fetch', vi.fn(async () => new Response('<html>', { status: 200, headers: { 'Content-Type': 'text/html' } })));
    expect(errorMessage(await request('GET', '/api/plans').catch((e) => e))).toMatch(han);
  });
});
