"""What the detector looks for, in folded text (fold.py: lower case, disguises undone), in English,
Chinese and Japanese. Each signal alone is common in honest text; detect.py decides on their
combinations.

  ADDRESSED    the reader is addressed as an AI: "AI agents reading this", "note to AI
               assistants", "if you are an AI", "Claude, please …", 致AI助手, AIアシスタントへ
  OVERRIDE     its instructions are to be replaced: "ignore previous instructions", "you are now
               DAN", "new instructions:", 忽略之前的指令, 以前の指示を無視
  ROLE         a system or assistant turn is posed: <system>, <|im_start|>, [INST], <<SYS>>,
               "SYSTEM MESSAGE:", a transcript's "Human: … Assistant:" (ROLE_IN_DATA: the
               `"role": "system"` of prompt-engineering code, weaker)
  SECRECY      the user is to be kept out: "do not tell the user", "secretly", 不要告诉用户
  ASKS         something is asked of the reader: imperatives and modals, 请, してください
  DANGERS      what would harm the user if done, each with its neutral description
  MENTION      the text talks about such phrases rather than using them (docs about prompt
               injection, filters, tests)
  CODE         prompt-engineering code: templates and message lists a program sends to a model
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs a hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterator


class _Lazy:
    """A pattern compiled on its first use: a hook that shows a past failure's line loads the
    guard, and most outputs are let through by the gate alone (compiling every pattern here
    costs ~35 ms; the gate ~1 ms)."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self._get().search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._get().finditer(text)


def _lazy(pattern: str, flags: int = 0) -> _Lazy:
    return _Lazy(pattern, flags)

# Words one of ADDRESSED, OVERRIDE, ROLE or SECRECY needs: a text without any is let through at
# the cost of one search (those patterns start with groups that every position tries).
GATE = _lazy("|".join([
    # an AI named (ADDRESSED)
    r"\b(?:ai|a\.i\.|ais|llms?|gpt|genai|assistants?|agents?|chat\s?bots?|bots?|models?|automated|claude|chatgpt|copilot"
    r"|gemini|cursor|codex|devin)",
    r"ai|人工智能|人工知能|智能|语言模型|語言模型|言語モデル|大模型|助手|助理|代理|アシスタント|エージェント",
    # its instructions replaced (OVERRIDE)
    r"\b(?:ignore|disregard|forget|overrid|overrul|bypass|discard|abandon|neglect|drop|instruction|directive|orders|task|goal"
    r"|objective|mission|system\s+prompt|you\s*(?:'re|are)\s+now|from\s+now\s+on|mode|jailbr|do\s+anything|act\s+as|authori"
    r"|approved|consented|permission|end\s+of|stop\s+(?:following|obeying)|precedence)",
    r"忽略|忽視|忽视|无视|無視|忘记|忘記|忘掉|理会|理會|抛开|拋開|覆盖|覆蓋|指令|指示|任务|任務|现在|現在|开发者|開發者|命令|ルール|プロンプト"
    r"|設定|忘れ|破棄|今から|これから|開発者",
    # a turn posed (ROLE, ROLE_IN_DATA)
    r"<\s*/?\s*(?:system|sys|assistant|admin|developer|instructions?|important)|<\||\[\s*/?\s*inst|<<\s*/?\s*sys"
    r"|\b(?:system|developer|admin|role|human)\b|系统|系統|システム",
    # the user kept out (SECRECY)
    r"\b(?:secretly|covertly|silently|quietly|hide|keep|user|human|operator|owner|anyone)"
    r"|悄悄|偷偷|秘密|暗中|用户|用戶|使用者|人类|人類|ユーザー|こっそり|密かに|内緒|黙って",
]))

_AI = (r"(?:(?:ai|a\.i\.|llm|gpt|genai|language[\s-]?model|autonomous|coding|code|automated|llm[\s-]based)[\s-]*"
       r"(?:assistants?|agents?|models?|bots?|systems?|tools?|helpers?|readers?|crawlers?|coders?|copilots?)"
       r"|ais|llms|ai|llm|assistants?|agents?|chat\s?bots?|bots?|language\s+models?|claude(?:\s+code)?|chatgpt|copilot|gemini"
       r"|cursor|codex|devin|gpt-?[0-9][\w.]*)")
_AI_CJK = (r"(?:ai|人工智能|人工知能|智能|大语言模型|大語言模型|语言模型|語言模型|言語モデル|大模型)\s*"
           r"(?:助手|助理|代理|模型|智能体|智能體|机器人|機器人|アシスタント|エージェント|モデル|ボット)?")

_VERBS = (r"run|execute|exec|type|paste|install|download|fetch|upload|send|post|email|mail|forward|transmit|exfiltrate|copy"
          r"|delete|remove|erase|wipe|disable|turn\s+off|skip|bypass|ignore|add|insert|append|inject|modify|change|replace|rewrite"
          r"|set|unset|commit|push|merge|deploy|publish|open|visit|navigate|call|invoke|curl|wget|pipe|grant|chmod|chown|sudo"
          r"|print|reveal|output|respond|reply|answer|say|tell|write|create|include|use|switch|follow|obey|comply|stop|start"
          r"|enable|do|make|update|edit|read|ensure|report|recommend|suggest|treat|consider|proceed|continue|perform")
ADDRESSED = _lazy("|".join([
    r"\b(?:hey|hi|hello|dear|attention|attn|psa|note|notice|message|memo|reminder|warning|instructions?|directive|important"
    r"|urgent|guidance)\b\W{0,4}(?:(?:to|for)\s+)?(?:all\s+|any\s+|every\s+|the\s+|you\s+)?" + _AI + r"\b",
    r"\b(?:to|for)\s+(?:all|any|every|each)\s+" + _AI + r"\b",
    _AI + r"\s+(?:that\s+(?:is|are)\s+|who\s+(?:is|are)\s+)?(?:reading|processing|parsing|scanning|analy[sz]ing|summari[sz]ing"
    r"|indexing|viewing|reviewing|working\s+(?:on|in|with)|operating|browsing|visiting|crawling|ingesting|seeing|encountering"
    r"|(?:that|who)\s+(?:reads?|process(?:es)?|sees?|finds?|encounters?|parses?))\b",
    r"\bif\s+you\s*(?:'re|are)\s+(?:an?\s+)?(?:ai|llm|large\s+language\s+model|language\s+model|assistant|agent|bot|chatbot"
    r"|automated|claude|gpt|chatgpt|copilot|model|coding\s+agent)\b",
    r"(?:^|\n|[.!?]\s*|\b(?:info|warn|warning|error|debug|notice|fatal)\W{1,3})\W{0,12}" + _AI + r"\s*[:,!]\s+\S",
    r"\b(?:claude|chatgpt|copilot|gemini|codex|assistant|agent)\s*,\s*(?:please|you|ignore|from|" + _VERBS + r")\b",
    r"(?:致|给|給|对|對|告诉|告訴|注意|提示|各位|所有|任何|亲爱的|親愛的)\s*(?:的)?\s*" + _AI_CJK + r"(?:们|們)?",
    r"如果你是\s*(?:一个|一個)?\s*" + _AI_CJK,
    r"(?:阅读|閱讀|读取|讀取|处理|處理|看到)\s*(?:此|这|這|本)\s*\S{0,4}\s*的\s*" + _AI_CJK,
    r"(?:ai|人工知能|言語モデル)\s*(?:アシスタント|エージェント|モデル)?\s*(?:へ|の皆様|の皆さん|各位|様)",
    r"(?:あなたが|もしあなたが)\s*(?:ai|人工知能|言語モデル|アシスタント|エージェント)",
    r"(?:この|本)\S{0,6}を(?:読んで|読む|処理する|処理している)\S{0,3}\s*(?:ai|人工知能|アシスタント|エージェント)",
    r"(?:^|\n|[。！？.!?]\s*|\b(?:info|warn|warning|error|debug|notice|fatal)\W{1,3})\W{0,12}" + _AI_CJK
    + r"\s*(?:们|們|注意|请注意|須知|须知|の皆様|の皆さん)?\s*[:：,，]",
]))

OVERRIDE = _lazy("|".join([
    r"\b(?:ignore|disregard|forget|override|overrule|bypass|discard|abandon|neglect|drop)\b\W+(?:\w+\W+){0,3}?"
    r"(?:previous|prior|preceding|above|earlier|former|original|initial|all|any|your|the|system|developer|safety|existing|old)"
    r"\W+(?:\w+\W+){0,2}?(?:instructions?|directions?|directives?|rules?|prompts?|guidelines?|guidance|context|constraints?"
    r"|restrictions?|polic(?:y|ies)|programming|commands?|orders?|messages?)\b",
    r"\b(?:new|updated|revised|real|true|actual|secret|hidden|additional|override)\s+(?:instructions?|directives?|task|orders?"
    r"|system\s+prompt|objective|goal|mission)\s*[:!]",
    r"\byou\s*(?:'re|are)\s+now\s+(?:in\s+)?(?:an?\s+)?(?:dan|developer\s+mode|unrestricted|jailbroken|unfiltered|god\s+mode"
    r"|admin|root|different|new|free)\b",
    r"\bfrom\s+now\s+on\s*,?\s+(?:you|your|the\s+assistant|ai)\b",
    r"\b(?:developer|god|debug|admin|maintenance|unrestricted)\s+mode\s+(?:is\s+)?(?:enabled|activated|on|engaged)\b",
    r"\bjailbr[eo]a?k", r"\bdo\s+anything\s+now\b", r"\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|evil|jailbroken|dan)\b",
    r"\b(?:the\s+)?(?:user|owner|admin|developer|operator)\s+(?:has\s+)?(?:already\s+)?(?:authori[sz]ed|approved|pre-?approved"
    r"|consented\s+to|given\s+(?:you\s+)?permission)\b",
    r"\bend\s+of\s+(?:the\s+)?(?:system\s+)?(?:prompt|instructions)\b", r"\bstop\s+(?:following|obeying)\b",
    r"\bthese\s+instructions\s+(?:take|have)\s+(?:precedence|priority)",
    r"\btake\s+precedence\s+over\s+(?:all\s+)?(?:other|previous|prior|your)\b",
    r"(?:忽略|忽視|忽视|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|抛开|拋開|覆盖|覆蓋)\s*(?:掉)?\s*(?:你|您)?\s*(?:之前|以前|先前|前面|上面|以上|上述"
    r"|所有|全部|原来|原來|原有|系统|系統)?\s*(?:的)?\s*(?:所有|全部)?\s*(?:的)?\s*(?:指令|指示|说明|說明|规则|規則|提示|命令|设定|設定|要求|约束|約束)",
    r"新的?\s*(?:指令|指示|任务|任務)\s*[:：]", r"(?:从现在开始|從現在開始|从现在起|從現在起)\s*[,，]?\s*你", r"你现在是|你現在是",
    r"(?:开发者|開發者)模式",
    r"(?:以前|前|上記|これまで|先ほど|既存|元|すべて|全て)の?\s*(?:指示|命令|指令|ルール|プロンプト|設定)\s*(?:を|は)?"
    r"\s*(?:すべて|全て)?\s*(?:無視|忘れ|破棄)", r"(?:指示|命令)を無視", r"新しい\s*(?:指示|命令|タスク)\s*[:：]",
    r"(?:今から|これから)\s*(?:あなたは|君は)", r"開発者モード",
]))

ROLE = _lazy("|".join([
    r"<\s*/?\s*(?:system|sys|assistant|admin|developer|system[-_ ]?(?:prompt|message|reminder|instructions?|override)"
    r"|important[-_ ]?instructions?|instructions?)\s*/?\s*>",
    r"<\|\s*(?:im_start|im_end|system|assistant|endoftext|begin_of_text|start_header_id|end_header_id|eot_id)\s*\|>",
    r"\[\s*/?\s*inst\s*\]", r"<<\s*/?\s*sys\s*>>",
    r"(?:^|\n)\W{0,14}(?:\[\s*)?(?:system|developer|admin)(?:\s*\])?\s*(?:message|prompt|note|notice|override|instructions?|update)?"
    r"\s*(?:\]|:)[^\S\n]*(?:\S|\n|$)",
    r"\b(?:system|admin|developer)\s+(?:message|prompt|override|notice|instructions?)\s*[:\]]",
    r"(?:^|\s)#{1,4}\s*(?:system|assistant|developer|instructions?)\s*:",
    r"(?:^|\n)\W{0,14}(?:human|user)\s*:\s[^\n]{0,400}\n(?:[^\n]*\n){0,6}\W{0,6}assistant\s*:",
    r"(?:系统|系統)\s*(?:消息|訊息|提示|指令|通知)\s*[:：\]】]", r"システム\s*(?:メッセージ|プロンプト|指示|通知)\s*[:：\]】]",
    r"[\[【]\s*(?:system|系统|系統|システム)\s*[\]】]",
]))
ROLE_IN_DATA = _lazy(r"[\"']?role[\"']?\s*[:=]\s*[\"'](?:system|developer|assistant)[\"']")

SECRECY = _lazy("|".join([
    r"\b(?:do\s+not|don'?t|never|without)\s+(?:\w+\s+){0,2}?(?:tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?"
    r"|mention(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|report(?:ing)?|show(?:ing)?|ask(?:ing)?|warn(?:ing)?|let(?:ting)?)"
    r"\s+(?:\w+\s+){0,3}?(?:the\s+)?(?:user|human|developer|operator|owner|anyone)\b",
    r"\bkeep\s+(?:this|it|that)\s+(?:a\s+)?(?:secret|hidden|quiet|confidential|between\s+us)\b",
    r"\b(?:secretly|covertly|without\s+(?:the\s+)?(?:user|anyone|them)(?:'s)?\s+(?:knowing|knowledge|noticing|consent|approval))\b",
    r"\b(?:silently|quietly)\s+(?:run|execute|upload|send|delete|remove|add|disable|install|modify|change|push|commit)\b",
    r"\bhide\s+(?:this|it|these|that)\s+from\s+(?:the\s+)?(?:user|human)\b",
    r"(?:不要|别|別|切勿|不得|不可|无需|無需)\s*(?:告诉|告訴|通知|提醒|让|讓|透露|提及|提到|显示|顯示|询问|詢問)\s*(?:给)?\s*(?:用户|用戶|使用者|人类|人類)",
    r"(?:悄悄|偷偷|秘密地|暗中)", r"ユーザー\s*(?:に|へ)\s*(?:は)?\s*(?:言わ|伝え|知らせ|報告し|見せ|確認し)\s*(?:ない|ず)",
    r"(?:こっそり|密かに|内緒で|黙って)",
]))

ASKS = _lazy("|".join([
    r"\b(?:you|u)\s+(?:must|should|shall|need\s+to|have\s+to|are\s+(?:required|expected|instructed|told|asked|supposed|to)"
    r"|will\s+now|may\s+now|can\s+now|'ll|are\s+going\s+to)\b",
    r"\b(?:please|kindly|immediately|make\s+sure|be\s+sure|remember\s+to|go\s+ahead\s+and|proceed\s+to|it\s+is\s+(?:mandatory"
    r"|required|essential|critical|imperative|important)\s+(?:to|that)|you(?:'re|\s+are)\s+(?:required|expected|instructed))\b",
    r"(?:^|[\n.:;!>*\-–—(]\s*|\b(?:and|then|to|first|now|always|never|also|just|else|please|immediately|on)\s+)(?:"
    + _VERBS + r")\b",
    r"\b(?:must|should|shall)\s+(?:always\s+|now\s+|first\s+|immediately\s+)?(?:" + _VERBS + r")\b",
    r"\b(?:assistant|agent|model|ai|claude|llm)s?\s+(?:must|should|shall|needs?\s+to|has\s+to|is\s+(?:required|expected"
    r"|instructed)\s+to|will\s+now)\b",
    r"\bfrom\s+now\s+on\b",
    r"(?:请|請|务必|務必|必须|必須|立即|立刻|马上|馬上|不要|别|別|一定要|应该|應該|需要|记得|記得)",
    r"(?:してください|して下さい|しなさい|せよ|すること|しろ|必ず|直ちに|すぐに|ください|下さい|してほしい|しておいて)",
]))

# What is asked, when doing it would harm the user: (description, pattern), first match named.
DANGERS: tuple[tuple[str, _Lazy], ...] = (
    ("to run a script downloaded from the web", _lazy(
        r"\b(?:curl|wget|iwr|invoke-webrequest|irm|fetch)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:sh|bash|zsh|dash|ksh|python[0-9.]*"
        r"|perl|ruby|node|iex|invoke-expression)\b|\b(?:bash|sh|zsh)\s+(?:-c\s+)?[\"']?(?:<\()?\$\(\s*(?:curl|wget)"
        r"|\bpipe\b.{0,60}\b(?:into|to|through)\s+(?:sh|bash|zsh|a\s+shell)\b|(?:执行|運行|运行|実行|執行).{0,30}(?:curl|wget)")),
    ("for a destructive command", _lazy(
        r"\brm\s+(?:-[a-z]+\s+)*-[a-z]*(?:rf|fr|r)[a-z]*\s+(?:-[a-z-]+\s+)*[\"']?(?:~|/(?=[\s\"'*]|$)|\$home|\$\{home\}|/home\b|/users\b"
        r"|\*|\.(?=[\s\"']|$)|--no-preserve-root)|\bshutil\.rmtree\s*\(\s*(?:os\.path\.expanduser|path\.home|[\"'](?:~|/)[\"'/])"
        r"|\bmkfs\b|\bdd\s+if=.{0,60}of=/dev/|\bformat\s+c:|\bdel\s+/[sfq]\b|\bdrop\s+(?:database|schema)\b"
        r"|:\(\)\s*\{\s*:\|:&\s*\};:|\bgit\s+push\s+(?:-f|--force)\b.{0,40}\b(?:main|master)\b"
        r"|(?:删除|刪除|削除|清空)\s*(?:所有|全部|すべて|全て|整个|整個)?\s*(?:主目录|主目錄|ホーム|家目录|文件|ファイル|数据|數據|データ)")),
    ("to upload a private key or other secrets", _lazy(
        r"(?:id_rsa|id_ed25519|id_ecdsa|id_dsa|\.ssh\b|\.aws/credentials|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.env\b"
        r"|private[\s_-]?keys?|api[\s_-]?keys?|access[\s_-]?tokens?|secret[\s_-]?keys?|credentials|passwords?|keychain|ssh[\s-]keys?"
        r"|密钥|私钥|密碼|密码|凭据|憑據|秘密鍵|秘密鍵|パスワード|認証情報)[^\n]{0,120}(?:\b(?:upload|send|post|email|e-mail|mail|forward"
        r"|transmit|exfiltrat\w*|share|paste|leak)\b|https?://|\bscp\b|上传|上傳|发送|發送|アップロード|送信)"
        r"|(?:\b(?:upload|send|post|email|e-mail|mail|forward|transmit|exfiltrat\w*|share|paste|leak|cat)\b|\bcurl\b[^\n]{0,80}"
        r"(?:-d\b|--data|-f\b|--form|-t\b|--upload-file)|\bscp\b|上传|上傳|发送|發送|アップロード|送信)[^\n]{0,120}(?:id_rsa|id_ed25519"
        r"|id_ecdsa|\.ssh/|\.aws/credentials|\.netrc|\.git-credentials|private[\s_-]?keys?|api[\s_-]?keys?|access[\s_-]?tokens?"
        r"|secret[\s_-]?keys?|credentials|passwords?|ssh[\s-]keys?|密钥|私钥|密码|凭据|秘密鍵|パスワード|認証情報)")),
    ("to turn off safety checks", _lazy(
        r"\b(?:disable|turn\s+off|skip|bypass|remove|delete|uninstall|deactivate|circumvent|switch\s+off|get\s+rid\s+of)\b"
        r"(?:\s+\w+){0,5}?\s+(?:git\s+)?(?:hooks?|pre-commit|husky|linters?|linting|tests?|ci|checks?|safeguards?|safety|security"
        r"|sandbox|permissions?|verification|signing|2fa|mfa|firewall|antivirus|guardrails?|code\s+review|reviews?)\b"
        r"|core\.hookspath|--no-verify\b|--dangerously[\w-]*|bypasspermissions|\bchmod\s+(?:-r\s+)?777\b|\bsetenforce\s+0\b"
        r"|(?:禁用|关闭|關閉|跳过|跳過|绕过|繞過|移除|删除|刪除|無効|オフ|スキップ|削除|外し)\s*\S{0,6}\s*(?:git\s*)?(?:钩子|鉤子|hooks?|フック"
        r"|测试|測試|テスト|检查|檢查|チェック|安全|セキュリティ)|(?:git\s*)?(?:钩子|鉤子|hooks?|フック|测试|測試|テスト|检查|檢查|チェック)"
        r"\s*\S{0,4}\s*(?:禁用|关闭|關閉|跳过|跳過|無効|オフ|スキップ|削除|外し)")),
    ("to add code that runs commands", _lazy(
        r"\b(?:add|insert|append|inject|include|put|place|paste|write)\b[^\n]{0,80}(?:os\.system|subprocess\.|\beval\s*\(|\bexec\s*\("
        r"|__import__|child_process|runtime\.getruntime)|(?:添加|加入|插入|追加|加上)[^\n]{0,40}(?:os\.system|subprocess|eval|exec)")),
    ("to open a remote shell", _lazy(
        r"/dev/tcp/|\bnc\s+(?:-\w+\s+)*-[a-z]*e\b|\bncat\b.{0,40}-e\b|\bbase64\s+(?:-d|--decode)\b.{0,40}\|\s*(?:sh|bash)\b"
        r"|reverse\s+shell")),
    ("to change shell start-up files or SSH access", _lazy(
        r"\b(?:add|append|write|echo|insert|put)\b[^\n]{0,80}(?:authorized_keys|\.bashrc|\.zshrc|\.bash_profile|\.profile|crontab"
        r"|/etc/sudoers)")),
)
# A danger said not to be done ("never skip tests", "do not run rm -rf") asks for nothing.
NEGATED = _lazy(r"(?:\b(?:never|not|don'?t|doesn'?t|no|avoid|without|mustn'?t|shouldn'?t|cannot|can'?t|refuse[sd]?\s+to"
                     r"|stop)\W+(?:\w+\W+){0,2}$|(?:不要|别|別|禁止|切勿|不得|不可|不能|绝不|絶対に)\s*\S{0,2}$)")

MENTION = _lazy("|".join([
    r"injection|jailbreak",
    r"\b(?:adversarial|red[\s-]team"
    r"|attack(?:s|er|ers)?|malicious|classifier|detect(?:s|ed|ion|or)?|filter(?:s|ed|ing)?|sanitiz\w*|blocklist|denylist"
    r"|test\s+cases?|examples?|e\.g\.|for\s+instance|such\s+as|phrases?\s+like|patterns?\s+like|strings?\s+like|known\s+as"
    r"|payloads?|heuristics?|benchmark|dataset|corpus)\b",
    r"(?:提示词?注入|注入攻击|注入攻擊|越狱|越獄|例如|比如|示例|攻击|攻撃|プロンプトインジェクション|インジェクション|攻撃|例えば|検出|检测)",
]))
CODE = _lazy("|".join([  # (multi-line: a unit's neighbourhood is searched)
    r"\b(?:system_?prompt|prompt_?template|messages\s*=\s*\[|chat\.completions|messages\.create|\.invoke\(|prompttemplate"
    r"|chatprompttemplate|systemmessage|humanmessage|aimessage|few[_\s-]?shot)\b",
    r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*(?:f|r|rf|fr)?[\"']{1,3}|[\"']{3}|[\"']content[\"']\s*:|(?:const|let|var)\s+\w+\s*=\s*[`\"'])",
    r"^\s*(?:def|class|return|import|from)\s", r"\{\{?\s*\w+\s*\}?\}",
    # a persona, as prompt templates begin ("You are a careful code reviewer."); an override says "you are now"
    r"(?<!if\s)\byou\s+are\s+(?:a|an)\s+(?:[\w-]+\s+){0,3}?(?:assistant|reviewer|expert|bot|agent|model|translator|classifier|writer"
    r"|engineer|helper|tutor|analyst|developer|programmer)\b",
    r"你是一个|你是一位|あなたは\S{0,12}(?:アシスタント|専門家)です",
]), re.M)
