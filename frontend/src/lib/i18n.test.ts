import { afterEach, describe, expect, it } from 'vitest';
import { DICTIONARIES, LOCALES, detectLocale, getLocale, placeholders, setLocale, STORAGE_KEY, t, tn, tx } from './i18n.svelte';
import { fmtCores, fmtDuration, fmtInt, fmtMs, fmtNum, fmtPct, fmtTime } from './format';
import { kneeSentence } from './sweep';

afterEach(() => setLocale('en'));

describe('i18n dictionaries', () => {
  const en = DICTIONARIES.en;
  const keys = Object.keys(en).sort();

  it.each(LOCALES.map((l) => [l]))('%s has every key of every other language, and no extra one', (l) => {
    const mine = Object.keys(DICTIONARIES[l]).sort();
    expect(mine).toEqual(keys);
    for (const other of LOCALES) expect(Object.keys(DICTIONARIES[other]).sort()).toEqual(mine);
  });

  it.each(LOCALES.map((l) => [l]))('%s: every message is non-empty and has the same {placeholders} as English', (l) => {
    for (const k of keys) {
      const text = DICTIONARIES[l][k as keyof typeof en];
      expect(text, `${l} ${k}`).toBeTypeOf('string');
      expect(text.trim(), `${l} ${k}`).not.toBe('');
      expect(placeholders(text), `${l} ${k}`).toEqual(placeholders(en[k as keyof typeof en]));
    }
  });

  it('plural keys come in pairs (.one and .other)', () => {
    for (const k of keys) {
      if (k.endsWith('.one')) expect(keys).toContain(k.replace(/\.one$/, '.other'));
    }
  });

  it('translates the words the code builds at run time (statuses, verdicts, metrics)', () => {
    for (const s of ['running', 'finished', 'stopped', 'failed', 'interrupted']) expect(tx(`status.${s}`, '?')).not.toBe('?');
    for (const v of ['regression', 'improvement', 'no_change', 'inconclusive', 'baseline']) expect(tx(`verdict.${v}`, '?')).not.toBe('?');
    for (const m of ['tps', 'p50', 'p90', 'p95', 'p99', 'max', 'error_rate', 'cpu_percent', 'rss_bytes'])
      expect(tx(`compare.metric.${m}`, '?')).not.toBe('?');
    expect(tx('status.unknown-thing', 'unknown-thing')).toBe('unknown-thing');
  });
});

describe('locale choice and formatting', () => {
  it('defaults from the browser language, a stored choice wins', () => {
    expect(detectLocale(null, ['zh-TW', 'en'])).toBe('zh-CN');
    expect(detectLocale(null, ['de-DE', 'en-GB'])).toBe('en');
    expect(detectLocale(null, ['fr'])).toBe('en');
    expect(detectLocale('zh-CN', ['en-US'])).toBe('zh-CN');
    expect(detectLocale('klingon', ['zh-CN'])).toBe('zh-CN');
  });

  it('switches language, remembers it, and formats numbers, units and dates for it', () => {
    expect(getLocale()).toBe('en');
    expect(t('nav.history')).toBe('History');
    expect(fmtCores(127)).toBe('1.27 cores');
    expect(tn('unit.vus', 1, { n: 1 })).toBe('1 VU');

    setLocale('zh-CN');
    expect(localStorage.getItem(STORAGE_KEY)).toBe('zh-CN');
    expect(document.documentElement.lang).toBe('zh-CN');
    expect(t('nav.history')).toBe('历史记录');
    expect(t('history.compare', { n: 3 })).toBe('对比（3）');
    expect(fmtInt(1234567)).toBe('1,234,567');
    expect(fmtNum(3.14159)).toBe('3.14');
    expect(fmtPct(0.015)).toBe('1.5%');
    expect(fmtMs(12.34)).toBe('12.3 ms');
    expect(fmtCores(127)).toBe('1.27 核');
    expect(fmtDuration(185)).toBe('3 分 05 秒');
    expect(fmtTime('2026-11-29T10:00:00Z')).toMatch(/^2026\/11\/\d\d \d\d:\d\d:\d\d$/);
    expect(kneeSentence([{ vus: 50, knee: true } as never])).toBe('拐点在 50 个虚拟用户：继续增加并发只会增加延迟，不会提高吞吐量。');

    setLocale('en');
    expect(fmtPct(0.015)).toBe('1.5 %');
    expect(fmtTime('2026-11-29T10:00:00Z')).toMatch(/^2026-11-\d\d \d\d:\d\d:\d\d$/);
  });
});
