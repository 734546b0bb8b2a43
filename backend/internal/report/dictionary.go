package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The report's languages: the UI's (frontend/src/lib/locales).
const DefaultLang = "en"

// Langs are the languages a report is written in.
var Langs = []string{"en", "zh-CN"}

// Lang picks a report's language: query (the `lang` parameter or `--report-lang`) when it names
// one of Langs (case-insensitive; "zh" and any "zh-…" mean zh-CN), else the first language of
// acceptLanguage (an HTTP Accept-Language header, by q-value, RFC 9110 §12.5.4) that does, else
// DefaultLang. ok is false when query is set but names no language of the report.
func Lang(query, acceptLanguage string) (lang string, ok bool) {
	if query != "" {
		if l := match(query); l != "" {
			return l, true
		}
		return DefaultLang, false
	}
	type pref struct {
		tag string
		q   float64
	}
	var prefs []pref
	for part := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, found := strings.CutPrefix(strings.TrimSpace(params), "q="); found {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if tag != "" && q > 0 {
			prefs = append(prefs, pref{tag, q})
		}
	}
	sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].q > prefs[j].q })
	for _, p := range prefs {
		if l := match(p.tag); l != "" {
			return l, true
		}
	}
	return DefaultLang, true
}

func match(tag string) string {
	t := strings.ToLower(strings.TrimSpace(tag))
	switch {
	case t == "en" || strings.HasPrefix(t, "en-"):
		return "en"
	case t == "zh" || strings.HasPrefix(t, "zh-"):
		return "zh-CN"
	}
	return ""
}

// tr is key's text in lang with its {placeholders} filled from args, given as name, value
// pairs. A key missing from the dictionary shows as ⟦key⟧ (the tests look for it).
func tr(lang, key string, args ...any) string {
	s, ok := dictionaries[lang][key]
	if !ok {
		if s, ok = dictionaries[DefaultLang][key]; !ok {
			return "⟦" + key + "⟧"
		}
	}
	for i := 0; i+1 < len(args); i += 2 {
		s = strings.ReplaceAll(s, "{"+fmt.Sprint(args[i])+"}", fmt.Sprint(args[i+1]))
	}
	return s
}

var dictionaries = map[string]map[string]string{
	"en": {
		"title":              "Volley run",
		"status":             "Status",
		"sep":                ". ",
		"status.running":     "running",
		"status.finished":    "finished",
		"status.stopped":     "stopped",
		"status.failed":      "failed",
		"status.interrupted": "interrupted",
		"started":            "Started {t}",
		"ended":              ", ended {t}",
		"executorIs":         "executor {e}",
		"outcome":            "Outcome",
		"error":              "Error",
		"yes":                "yes",
		"no":                 "no",
		"noData":             "no data",

		"outcome.passed":               "passed",
		"outcome.finished_with_errors": "finished with errors",
		"outcome.failed":               "failed",
		"why.status":                   "the run ended with status {status}",
		"why.errorRate":                "error rate {rate} is above {max}",
		"why.thresholds":               "{n} threshold(s) failed",
		"why.passed":                   "error rate at most {max} and every threshold passed",
		"why.join":                     "; ",

		"warn.bound":     "{n} of {of} seconds were generator-bound: the load generator's CPU was saturated, so those seconds may describe the generator rather than the target.",
		"warn.aborted":   "The run was aborted: {why}",
		"warn.noSummary": "This run has no summary (it has not ended, or failed before measuring): only its seconds are shown.",

		"h.summary":     "Summary",
		"h.settings":    "Load settings",
		"h.stages":      "Stages",
		"h.requestList": "Requests sent",
		"h.thresholds":  "Thresholds",
		"h.generator":   "Generator verdict",
		"h.charts":      "Charts",
		"h.events":      "Live changes",
		"h.latency":     "Latency (ms)",
		"h.requests":    "Per request",
		"h.timing":      "Timing breakdown (ms)",
		"h.failures":    "Failures",
		"h.errorKinds":  "Errors by kind",
		"h.statusCodes": "Status codes",
		"h.protocols":   "Protocols (responses)",
		"h.checks":      "Checks",
		"h.sweep":       "Concurrency sweep",

		"fig.requests":   "requests ({ok} ok, {errors} errors, {interrupted} interrupted)",
		"fig.throughput": "throughput (send rate {rate}/s)",
		"fig.errorRate":  "error rate",
		"fig.p95":        "p95 latency",
		"fig.duration":   "duration ({n} seconds sampled)",
		"fig.dropped":    "dropped iterations",
		"fig.data":       "data in / out",
		"fig.decoded":    "compressed bodies, decoded size",
		"fig.generator":  "generator CPU avg (of one core) / RSS max",

		"set.executor":        "Executor",
		"set.vus":             "VUs",
		"set.startVUs":        "Start VUs",
		"set.duration":        "Duration",
		"set.iterations":      "Iterations",
		"set.maxDuration":     "Max duration",
		"set.rate":            "Rate (iterations per time unit)",
		"set.startRate":       "Start rate",
		"set.timeUnit":        "Time unit",
		"set.preAllocatedVUs": "Pre-allocated VUs",
		"set.maxVUs":          "Max VUs",
		"set.levels":          "Sweep levels (VUs)",
		"set.stepDuration":    "Step duration",
		"set.gracefulStop":    "Graceful stop",
		"set.flow":            "Flow",
		"set.thinkTime":       "Think time",
		"set.data":            "Data rows",
		"set.timeout":         "Request timeout",
		"set.connectTimeout":  "Connect timeout",
		"set.keepAlive":       "Keep-alive",
		"set.followRedirects": "Follow redirects",
		"set.insecure":        "Skip TLS verification",
		"set.maxBody":         "Max body read (bytes)",
		"set.cookies":         "Cookie jar",
		"set.compression":     "Compression asked for",
		"set.hosts":           "Host overrides",
		"set.stageVUs":        "target VUs",
		"set.stageRate":       "target rate (per time unit)",
		"set.secretsNote":     "Secrets appear by name ({{secret.NAME}}) and secret header values as ********; their values are never in this report.",

		"col.name":         "name",
		"col.method":       "method",
		"col.weight":       "weight",
		"col.thinkTime":    "think time",
		"col.checks":       "checks",
		"col.duration":     "duration",
		"col.threshold":    "threshold",
		"col.value":        "value",
		"col.result":       "result",
		"col.elapsed":      "elapsed",
		"col.time":         "time (UTC)",
		"col.change":       "change",
		"col.by":           "by",
		"col.mean":         "mean",
		"col.request":      "request",
		"col.requests":     "requests",
		"col.errors":       "errors",
		"col.errorRate":    "error rate",
		"col.checksPassed": "checks passed",
		"col.phase":        "phase",
		"col.kind":         "kind",
		"col.status":       "status",
		"col.protocol":     "protocol",
		"col.message":      "message",
		"col.count":        "count",
		"col.share":        "share",
		"col.shareErrors":  "share of errors",
		"col.check":        "check",
		"col.passes":       "passes",
		"col.fails":        "fails",
		"col.knee":         "knee",

		"th.passed":       "passed",
		"th.failed":       "FAILED",
		"th.notEvaluated": "not evaluated",

		"gen.keptUp":       "The generator kept up for all {of} seconds: the figures describe the target.",
		"gen.bound":        "The generator was saturated in {n} of {of} seconds: those seconds may describe the generator rather than the target.",
		"gen.boundSeconds": "Generator-bound seconds",
		"gen.cpu":          "CPU avg / max (of one core)",
		"gen.rss":          "Memory (RSS) max",
		"gen.allocs":       "Heap allocations per request",
		"gen.lag":          "Schedule lag p99",
		"gen.cpuNote":      "CPU is per core: 200 % means two cores busy.",

		"chart.tps":           "Throughput",
		"chart.latency":       "Latency per second",
		"chart.errors":        "Errors",
		"chart.errorsDropped": "Errors and dropped iterations",
		"chart.vus":           "Active VUs",
		"chart.status":        "Status codes",
		"chart.cpu":           "Generator CPU",
		"chart.rss":           "Generator memory (RSS)",
		"chart.lag":           "Schedule lag (open model)",
		"chart.bound":         "generator-bound",
		"chart.events":        "live change",
		"chart.empty":         "No seconds were recorded.",
		"axis.elapsed":        "elapsed time (s)",
		"axis.rps":            "requests per second (req/s)",
		"axis.ms":             "latency (ms)",
		"axis.perS":           "per second",
		"axis.vus":            "VUs",
		"axis.cpu":            "CPU (% of one core)",
		"axis.mib":            "memory (MiB)",
		"series.rps":          "requests/s",
		"series.errors":       "errors/s",
		"series.dropped":      "dropped/s",
		"series.other":        "other",
		"event.vus":           "VUs {from} → {to}",
		"event.rate":          "rate {from} → {to}",

		"lat.all":     "all responses",
		"lat.success": "successes",
		"lat.service": "service time",
		"lat.none":    "no response: latencies are unknown",

		"phase.connect": "connect",
		"phase.tls":     "TLS handshake",
		"phase.wait":    "waiting (time to first byte)",
		"phase.receive": "receiving",
		"timing.all":    "all requests",
		"timing.note":   "Connect and TLS are 0 for a request on a reused (kept-alive) connection, and those zeros count in the percentiles; waiting runs from the request written to the first response byte.",

		"h.ws":         "WebSocket",
		"ws.sessions":  "sessions",
		"ws.failed":    "failed",
		"ws.sent":      "messages sent",
		"ws.received":  "messages received",
		"ws.total":     "total",
		"ws.perSecond": "per second",
		"ws.connect":   "connect (to upgrade)",
		"ws.roundTrip": "round trip",

		"fail.sample":      "sample response (HTTP {status})",
		"fail.moreHeaders": "… {n} more headers",
		"fail.truncated":   "Body cut after its first KiB.",
		"fail.more":        "{n} more failed requests in groups not shown.",

		"noErrors":    "No errors.",
		"noResponses": "No responses.",
		"footer":      "Generated by Volley. Latency percentiles come from merged HDR histograms; per-second lines are downsampled with LTTB when a run is long. CPU is per core (200 % = two cores busy).",
		// the Target section (target.go)
		"h.target":       "Target",
		"target.error":   "Monitor {monitor}: {message} ({seconds} s; those seconds are gaps).",
		"target.cpu":     "CPU %",
		"target.memory":  "memory",
		"target.load":    "load",
		"target.network": "network",
		"target.tcp":     "TCP connections",
		"target.monitor": "monitor",
		"target.series":  "series",
		"target.avg":     "avg",
		"target.max":     "max",
		"target.gaps":    "gaps",
		"axis.pct":       "%",
		"axis.kibps":     "KiB/s",
		"axis.value":     "value",
	},
	"zh-CN": {
		"title":              "Volley 运行",
		"status":             "状态",
		"sep":                "。",
		"status.running":     "运行中",
		"status.finished":    "已完成",
		"status.stopped":     "已停止",
		"status.failed":      "失败",
		"status.interrupted": "已中断",
		"started":            "开始于 {t}",
		"ended":              "，结束于 {t}",
		"executorIs":         "执行器 {e}",
		"outcome":            "结果",
		"error":              "错误",
		"yes":                "是",
		"no":                 "否",
		"noData":             "无数据",

		"outcome.passed":               "通过",
		"outcome.finished_with_errors": "完成但有错误",
		"outcome.failed":               "失败",
		"why.status":                   "运行以状态 {status} 结束",
		"why.errorRate":                "错误率 {rate} 高于 {max}",
		"why.thresholds":               "{n} 个阈值未通过",
		"why.passed":                   "错误率不超过 {max}，且所有阈值均通过",
		"why.join":                     "；",

		"warn.bound":     "{of} 秒中有 {n} 秒受限于压测机：压测机 CPU 已饱和，这些秒的数据可能反映的是压测机而不是被测目标。",
		"warn.aborted":   "运行被中止：{why}",
		"warn.noSummary": "此运行没有汇总（尚未结束，或在测量前失败）：仅显示逐秒数据。",

		"h.summary":     "汇总",
		"h.settings":    "负载设置",
		"h.stages":      "阶段",
		"h.requestList": "发送的请求",
		"h.thresholds":  "阈值",
		"h.generator":   "压测机结论",
		"h.charts":      "图表",
		"h.events":      "运行中调整",
		"h.latency":     "延迟（毫秒）",
		"h.requests":    "按请求",
		"h.timing":      "耗时分解（毫秒）",
		"h.failures":    "失败",
		"h.errorKinds":  "按类型的错误",
		"h.statusCodes": "状态码",
		"h.protocols":   "协议（响应数）",
		"h.checks":      "检查",
		"h.sweep":       "并发扫描",

		"fig.requests":   "请求（{ok} 成功，{errors} 错误，{interrupted} 中断）",
		"fig.throughput": "吞吐量（发送速率 {rate}/秒）",
		"fig.errorRate":  "错误率",
		"fig.p95":        "p95 延迟",
		"fig.duration":   "时长（采样 {n} 秒）",
		"fig.dropped":    "丢弃的迭代",
		"fig.data":       "接收 / 发送数据",
		"fig.decoded":    "压缩响应体解码后大小",
		"fig.generator":  "压测机 CPU 平均（单核）/ RSS 最大",

		"set.executor":        "执行器",
		"set.vus":             "虚拟用户数",
		"set.startVUs":        "起始虚拟用户数",
		"set.duration":        "时长",
		"set.iterations":      "迭代次数",
		"set.maxDuration":     "最长时长",
		"set.rate":            "速率（每时间单位迭代数）",
		"set.startRate":       "起始速率",
		"set.timeUnit":        "时间单位",
		"set.preAllocatedVUs": "预分配虚拟用户数",
		"set.maxVUs":          "最大虚拟用户数",
		"set.levels":          "扫描级别（虚拟用户数）",
		"set.stepDuration":    "每级时长",
		"set.gracefulStop":    "优雅停止",
		"set.flow":            "流程",
		"set.thinkTime":       "思考时间",
		"set.data":            "数据行",
		"set.timeout":         "请求超时",
		"set.connectTimeout":  "连接超时",
		"set.keepAlive":       "保持连接",
		"set.followRedirects": "跟随重定向",
		"set.insecure":        "跳过 TLS 校验",
		"set.maxBody":         "最大读取响应体（字节）",
		"set.cookies":         "Cookie 罐",
		"set.compression":     "请求的压缩",
		"set.hosts":           "主机覆盖",
		"set.stageVUs":        "目标虚拟用户数",
		"set.stageRate":       "目标速率（每时间单位）",
		"set.secretsNote":     "密钥只以名称（{{secret.NAME}}）出现，机密请求头的值显示为 ********；本报告中不含其值。",

		"col.name":         "名称",
		"col.method":       "方法",
		"col.weight":       "权重",
		"col.thinkTime":    "思考时间",
		"col.checks":       "检查",
		"col.duration":     "时长",
		"col.threshold":    "阈值",
		"col.value":        "值",
		"col.result":       "结果",
		"col.elapsed":      "已用时间",
		"col.time":         "时间（UTC）",
		"col.change":       "调整",
		"col.by":           "操作者",
		"col.mean":         "平均",
		"col.request":      "请求",
		"col.requests":     "请求数",
		"col.errors":       "错误",
		"col.errorRate":    "错误率",
		"col.checksPassed": "检查通过",
		"col.phase":        "阶段",
		"col.kind":         "类型",
		"col.status":       "状态",
		"col.protocol":     "协议",
		"col.message":      "消息",
		"col.count":        "次数",
		"col.share":        "占比",
		"col.shareErrors":  "占错误比例",
		"col.check":        "检查",
		"col.passes":       "通过",
		"col.fails":        "失败",
		"col.knee":         "拐点",

		"th.passed":       "通过",
		"th.failed":       "未通过",
		"th.notEvaluated": "未评估",

		"gen.keptUp":       "压测机在全部 {of} 秒内都跟上了负载：数据反映的是被测目标。",
		"gen.bound":        "压测机在 {of} 秒中有 {n} 秒处于饱和：这些秒的数据可能反映的是压测机而不是被测目标。",
		"gen.boundSeconds": "受限于压测机的秒数",
		"gen.cpu":          "CPU 平均 / 最大（单核）",
		"gen.rss":          "内存（RSS）最大",
		"gen.allocs":       "每请求堆分配次数",
		"gen.lag":          "调度延迟 p99",
		"gen.cpuNote":      "CPU 按单核计：200 % 表示两个核忙碌。",

		"chart.tps":           "吞吐量",
		"chart.latency":       "每秒延迟",
		"chart.errors":        "错误",
		"chart.errorsDropped": "错误与丢弃的迭代",
		"chart.vus":           "活跃虚拟用户",
		"chart.status":        "状态码",
		"chart.cpu":           "压测机 CPU",
		"chart.rss":           "压测机内存（RSS）",
		"chart.lag":           "调度延迟（开放模型）",
		"chart.bound":         "受限于压测机",
		"chart.events":        "运行中调整",
		"chart.empty":         "没有记录到任何一秒。",
		"axis.elapsed":        "已用时间（秒）",
		"axis.rps":            "每秒请求数（req/s）",
		"axis.ms":             "延迟（毫秒）",
		"axis.perS":           "每秒",
		"axis.vus":            "虚拟用户",
		"axis.cpu":            "CPU（单核 %）",
		"axis.mib":            "内存（MiB）",
		"series.rps":          "请求/秒",
		"series.errors":       "错误/秒",
		"series.dropped":      "丢弃/秒",
		"series.other":        "其他",
		"event.vus":           "虚拟用户 {from} → {to}",
		"event.rate":          "速率 {from} → {to}",

		"lat.all":     "全部响应",
		"lat.success": "成功响应",
		"lat.service": "服务时间",
		"lat.none":    "没有任何响应：延迟未知",

		"phase.connect": "连接",
		"phase.tls":     "TLS 握手",
		"phase.wait":    "等待（首字节时间）",
		"phase.receive": "接收",
		"timing.all":    "全部请求",
		"timing.note":   "复用（keep-alive）连接上的请求，其连接与 TLS 时间为 0，这些 0 也计入百分位数；等待从请求写出到收到第一个响应字节。",

		"h.ws":         "WebSocket",
		"ws.sessions":  "会话",
		"ws.failed":    "失败",
		"ws.sent":      "发送消息",
		"ws.received":  "接收消息",
		"ws.total":     "合计",
		"ws.perSecond": "每秒",
		"ws.connect":   "连接（至升级完成）",
		"ws.roundTrip": "往返",

		"fail.sample":      "示例响应（HTTP {status}）",
		"fail.moreHeaders": "… 另有 {n} 个响应头",
		"fail.truncated":   "响应体在第一个 KiB 后截断。",
		"fail.more":        "另有 {n} 个失败请求在未显示的分组中。",

		"noErrors":    "没有错误。",
		"noResponses": "没有响应。",
		"footer":      "由 Volley 生成。延迟百分位数来自合并的 HDR 直方图；运行较长时逐秒曲线用 LTTB 降采样。CPU 按单核计（200 % = 两个核忙碌）。",
		// the Target section (target.go)
		"h.target":       "被测端",
		"target.error":   "监控 {monitor}：{message}（{seconds} 秒；这些秒为空缺）。",
		"target.cpu":     "CPU %",
		"target.memory":  "内存",
		"target.load":    "负载",
		"target.network": "网络",
		"target.tcp":     "TCP 连接",
		"target.monitor": "监控",
		"target.series":  "序列",
		"target.avg":     "平均",
		"target.max":     "最大",
		"target.gaps":    "空缺",
		"axis.pct":       "%",
		"axis.kibps":     "KiB/s",
		"axis.value":     "数值",
	},
}
