//! The rules for tokens known by their shape: private keys, password hashes and vendors' tokens
//! (a prefix and a length), each with the expression that finds it.

use super::*;

/// A vendor token recognised by its prefix and shape alone; the `s` group is the token.
pub(super) const fn vendor(
    kind: &'static str,
    description: &'static str,
    prefilter: &'static str,
    pattern: &'static str,
) -> Spec {
    Spec {
        kind,
        description,
        prefilter,
        pattern,
        locate: vendor_token,
    }
}

/// The token rules, in the order they run (before the rules of `rules.rs`).
pub(super) const TOKEN_SPECS: &[Spec] = &[
    Spec {
        kind: "private_key",
        description: "PEM, OpenSSH or PuTTY private key, or a base64-encoded PEM private key",
        prefilter: r"PRIVATE KEY|Private-Lines|LS0tLS1CRUdJTi",
        pattern: concat!(
            // A BEGIN line, then either key-shaped text up to the END line, or (the chunk was
            // cut before the END line) header/blank lines and base64 lines.
            r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
            r"(?:[A-Za-z0-9+/=\s:,.\\-]*?-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
            r"|(?:(?:\r?\n|\\r\\n|\\n)[ \t]*(?:[A-Za-z][A-Za-z-]*:[^\r\n\\]*)?)*",
            r"(?:(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/=]{16,})+)",
            // A chunk that starts inside the block: base64 lines up to the END line.
            r"|(?m:^)[ \t]*(?:[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+[ \t]*",
            r"-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
            // PuTTY's .ppk: the lines after `Private-Lines: N` (the public lines are public).
            r"|Private-Lines:[ \t]*[0-9]{1,3}[ \t]*\r?\n",
            r"(?P<ppk>(?:[A-Za-z0-9+/=]{4,}[ \t]*\r?\n)*[A-Za-z0-9+/=]{4,})[ \t]*(?:\r?\n|$)",
            // A whole PEM file in base64, as in a kubeconfig's `client-key-data`; the locate
            // function decodes the head to tell a private key from a certificate.
            r"|(?P<b64>LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2})",
        ),
        locate: private_key,
    },
    Spec {
        kind: "private_key",
        description: "an OpenVPN static key (the hex lines of -----BEGIN OpenVPN Static key V1-----)",
        prefilter: r"OpenVPN Static key",
        pattern: concat!(
            r"-----BEGIN OpenVPN Static key V1-----[ \t]*\r?\n",
            r"(?P<s>(?:[ \t]*[0-9A-Fa-f]{16,}[ \t]*\r?\n)*[ \t]*[0-9A-Fa-f]{16,})",
        ),
        locate: group_s,
    },
    Spec {
        kind: "private_key",
        description: "a JSON Web Key's private members (d; p, q, dp, dq and qi of an RSA key; k of a symmetric one) in an object that names its key type (\"kty\")",
        prefilter: r#""kty""#,
        pattern: r#""(?:d|p|q|dp|dq|qi|k)"[ \t]*:[ \t]*"(?P<s>[A-Za-z0-9_-]{16,})""#,
        locate: jwk_private,
    },
    Spec {
        kind: "password_assignment",
        description: "the password line of an OpenVPN configuration's inline <auth-user-pass> block (the user's line, then the password's)",
        prefilter: r"<auth-user-pass>",
        pattern: r"<auth-user-pass>[ \t]*\r?\n[ \t]*[^\s<]+[ \t]*\r?\n[ \t]*(?P<s>[^\s<]+)[ \t]*\r?\n[ \t]*</auth-user-pass>",
        locate: netrc,
    },
    Spec {
        kind: "password_assignment",
        description: "the result of a random_password resource in a Terraform state (.tfstate)",
        prefilter: r#""random_password""#,
        pattern: r#""result"[ \t]*:[ \t]*"(?P<s>(?:[^"\\\r\n]|\\.)+)""#,
        locate: terraform_generated,
    },
    Spec {
        kind: "consul_token",
        description: "a Consul ACL token (a UUID) given to Consul's token settings: initial_management, agent_recovery, the acl_*_token settings, CONSUL_HTTP_TOKEN, or agent, default, … inside a tokens block",
        prefilter: concat!(
            r"initial_management|agent_recovery|agent_master|acl_[a-z_]*token|CONSUL_(?:HTTP_)?TOKEN",
            r#"|tokens["']?[ \t]*[:=]?[ \t]*\{"#,
        ),
        pattern: concat!(
            r"(?-u:\b)(?P<k>initial_management|agent_recovery|agent_master|acl_[a-z_]*token|CONSUL_(?:HTTP_)?TOKEN",
            r#"|agent|default|dns|master|replication)["']?[ \t]*[:=][ \t]*["']?"#,
            r"(?P<s>[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})(?-u:\b)",
        ),
        locate: consul_token,
    },
    Spec {
        kind: "password_assignment",
        description: "a generated value under an upper-case name ending in _PAT, a personal access token's (AZURE_DEVOPS_EXT_PAT, GH_PAT)",
        prefilter: r"_PAT[ \t]*[:=]",
        pattern: r#"(?-u:\b)(?P<k>[A-Z][A-Z0-9_]*_PAT)[ \t]*[:=][ \t]*["']?(?P<s>[A-Za-z0-9_-]{20,})["']?"#,
        locate: generated_value,
    },
    Spec {
        kind: "private_key",
        description: "an Ethereum account's private key (64 hex digits) given to an account or wallet constructor: Account.from_key(\"0x...\"), privateKeyToAccount, new ethers.Wallet, Wallet.fromPrivateKey",
        prefilter: r"from_key[ \t]*\(|privateKeyToAccount[ \t]*\(|Wallet[ \t]*\(|fromPrivateKey[ \t]*\(",
        pattern: concat!(
            r"(?:from_key|privateKeyToAccount|Wallet|fromPrivateKey)[ \t]*\(\s*",
            r#"(?:Buffer\.from\(\s*)?["'](?P<s>(?:0x)?[0-9A-Fa-f]{64})["']"#,
        ),
        locate: group_s,
    },
    Spec {
        kind: "password_hash",
        description: "crypt(3), htpasswd, LDAP or Django password hash",
        prefilter: concat!(
            r"\$(?:2[abxy]?|1|5|6|apr1|y|gy|7|argon2id|argon2i|argon2d)\$",
            r"|\{S?(?:SHA|MD5)|pbkdf2_sha(?:1|256)\$",
        ),
        pattern: concat!(
            r"(?P<s>\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]{53}",
            r"|\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}",
            r"|\$[56]\$(?:rounds=[0-9]{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43}(?:[./A-Za-z0-9]{43})?",
            r"|\$(?:y|gy|7)\$[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}",
            r"|\$argon2(?:id|i|d)\$(?:v=[0-9]{1,3}\$)?m=[0-9]{1,9},t=[0-9]{1,9},p=[0-9]{1,3}\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}",
            r"|\{S?(?:SHA(?:256|512)?|MD5)\}[A-Za-z0-9+/]{20,}={0,2}",
            r"|pbkdf2_sha(?:1|256)\$[0-9]{1,7}\$[A-Za-z0-9./+]{1,64}\$[A-Za-z0-9+/]{20,}={0,2})",
            r"(?:[^./A-Za-z0-9+=]|$)",
        ),
        locate: vendor_token,
    },
    Spec {
        kind: "anthropic_api_key",
        description: "Anthropic API key (sk-ant-...)",
        prefilter: r"sk-ant-",
        pattern: r"(?-u:\b)(?P<s>sk-ant-(?:[a-z]{2,10}[0-9]{0,3}-)?[A-Za-z0-9_-]{20,300})",
        locate: vendor_token,
    },
    Spec {
        kind: "openai_api_key",
        description: "OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...)",
        prefilter: r"sk-",
        pattern: r"(?-u:\b)(?P<s>sk-(?:(?:proj|svcacct|admin)-)?(?P<b>[A-Za-z0-9_-]{32,300}))",
        locate: openai,
    },
    Spec {
        kind: "aws_access_key_id",
        description: "AWS access key id (AKIA or ASIA and 16 base-32 characters)",
        prefilter: r"AKIA|ASIA",
        pattern: r"(?-u:\b)(?P<s>(?:AKIA|ASIA)[A-Z2-7]{16})(?-u:\b)",
        locate: vendor_token,
    },
    Spec {
        kind: "aws_secret_access_key",
        description: "AWS secret access key (40 characters) assigned to an aws_secret_access_key-like name",
        prefilter: r"(?i-u)secret[_.-]?access|aws[_.-]?secret|AKIA|ASIA",
        pattern: concat!(
            r"(?i:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)",
            r#"(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:\\?["'])?"#,
            r"(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
            // The argument after an access key id (`new BasicAWSCredentials("AKIA…", "…")`),
            // which the rule before has masked by now.
            r#"|(?:(?-u:\b)(?:AKIA|ASIA)[A-Z2-7]{16}|\[REDACTED:aws_access_key_id\])["']?\s*,\s*["']"#,
            r"(?P<t>[A-Za-z0-9/+]{40})[\x22']",
        ),
        locate: either_vendor_group,
    },
    Spec {
        kind: "github_token",
        description: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ and 36+ characters; github_pat_...)",
        prefilter: r"gh[pousr]_|github_pat_",
        pattern: r"(?-u:\b)(?P<s>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
        locate: vendor_token,
    },
    Spec {
        kind: "gitlab_token",
        description: "GitLab token (glpat-, gldt-, glrt-, glptt-, glft-, glsoat-, gloas- and 20+ characters)",
        prefilter: r"gl(?:pat|dt|rt|ptt|ft|soat|oas)-",
        pattern: r"(?-u:\b)(?P<s>gl(?:pat|dt|rt|ptt|ft|soat|oas)-[A-Za-z0-9_-]{20,255}(?:\.[A-Za-z0-9_-]+)*)",
        locate: vendor_token,
    },
    Spec {
        kind: "slack_token",
        description: "Slack token (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-, xoxo-, xapp-)",
        prefilter: r"xox[abeoprs]-|xapp-",
        pattern: r"(?-u:\b)(?P<s>xox[abeoprs]-[0-9A-Za-z-]{10,250}|xapp-[0-9]-[0-9A-Za-z-]{10,250})",
        locate: slack,
    },
    Spec {
        kind: "stripe_key",
        description: "Stripe live secret or restricted key (sk_live_..., rk_live_...) or webhook signing secret (whsec_...)",
        prefilter: r"k_(?:live|prod)_|whsec_",
        pattern: concat!(
            r"(?-u:\b)(?P<s>[sr]k_(?:live|prod)_[0-9A-Za-z]{10,247}",
            r"|whsec_[A-Za-z0-9+/]{32,100}={0,2})(?:[^0-9A-Za-z+/=]|$)",
        ),
        locate: vendor_token,
    },
    Spec {
        kind: "google_api_key",
        description: "Google API key (AIza and 35 characters)",
        prefilter: r"AIza",
        pattern: r"(?-u:\b)(?P<s>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        locate: vendor_token,
    },
    vendor(
        "google_oauth_token",
        "Google OAuth client secret (GOCSPX-...) or access token (ya29. ...)",
        r"GOCSPX-|ya29\.",
        r"(?-u:\b)(?P<s>GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)",
    ),
    vendor(
        "sendgrid_api_key",
        "SendGrid API key (SG. and two dot-separated parts)",
        r"SG\.",
        r"(?-u:\b)(?P<s>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
    ),
    vendor(
        "twilio_api_key",
        "Twilio API key (SK and 32 hex digits)",
        r"SK[0-9a-fA-F]{8}",
        r"(?-u:\b)(?P<s>SK[0-9a-fA-F]{32})(?-u:\b)",
    ),
    Spec {
        kind: "twilio_auth_token",
        description: "Twilio auth token (32 hex digits) given beside its account SID (AC and 32 hex digits, or a variable named for it)",
        prefilter: r"AC[0-9a-f]{32}|Client\([ \t\r\n]*[A-Za-z_.]*(?i-u:sid)",
        pattern: concat!(
            r#"(?-u:\b)AC[0-9a-f]{32}["']?[ \t]*[,:][ \t]*(?:[A-Za-z_]+[ \t]*=[ \t]*)?["']?"#,
            r"(?P<s>[0-9a-f]{32})(?-u:\b)",
            // `Client(ACCOUNT_SID, "…")`: the SID held in a variable named for it.
            r#"|Client\(\s*[A-Za-z_.]*(?i-u:sid)[A-Za-z_]*\s*,\s*["'](?P<t>[0-9a-f]{32})["']"#,
        ),
        locate: either_vendor_group,
    },
    vendor(
        "discord_bot_token",
        "Discord bot token (the bot's id in base64, a timestamp and an HMAC, dot-separated) given to a client's run() or login()",
        // Keyed on the call: a prefilter run of 24 characters from any `M`, `N` or `O` made the
        // one pass over every text a quarter slower. Under a token name it is
        // `password_assignment`'s.
        r"\.(?:run|login)\(",
        concat!(
            r#"\.(?:run|login)\(\s*["'](?P<s>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\."#,
            r#"[A-Za-z0-9_-]{27,38})["']"#,
        ),
    ),
    vendor(
        "npm_token",
        "npm access token (npm_ and 36 characters)",
        r"npm_",
        r"(?-u:\b)(?P<s>npm_[A-Za-z0-9]{36})(?-u:\b)",
    ),
    vendor(
        "pypi_token",
        "PyPI or TestPyPI API token (pypi-AgE...)",
        r"pypi-AgE",
        r"(?-u:\b)(?P<s>pypi-AgE[A-Za-z0-9_-]{50,})",
    ),
    vendor(
        "dockerhub_token",
        "Docker Hub personal or organisation access token (dckr_pat_..., dckr_oat_...)",
        r"dckr_(?:pat|oat)_",
        r"(?-u:\b)(?P<s>dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})(?:[^A-Za-z0-9_-]|$)",
    ),
    Spec {
        kind: "huggingface_token",
        description: "Hugging Face access token (hf_ and 34 mixed-case characters)",
        prefilter: r"hf_",
        pattern: r"(?-u:\b)(?P<s>hf_(?P<b>[A-Za-z0-9]{34}))(?-u:\b)",
        locate: mixed_case,
    },
    vendor(
        "groq_api_key",
        "Groq API key (gsk_ and 52 characters)",
        r"gsk_",
        r"(?-u:\b)(?P<s>gsk_[A-Za-z0-9]{52})(?-u:\b)",
    ),
    vendor(
        "replicate_token",
        "Replicate API token (r8_ and 37 characters)",
        r"r8_",
        r"(?-u:\b)(?P<s>r8_[A-Za-z0-9]{37})(?-u:\b)",
    ),
    vendor(
        "perplexity_api_key",
        "Perplexity API key (pplx- and 48 characters)",
        r"pplx-",
        r"(?-u:\b)(?P<s>pplx-[A-Za-z0-9]{48})(?-u:\b)",
    ),
    vendor(
        "xai_api_key",
        "xAI API key (xai- and 80 characters)",
        r"xai-",
        r"(?-u:\b)(?P<s>xai-[A-Za-z0-9]{80})(?-u:\b)",
    ),
    vendor(
        "langsmith_api_key",
        "LangSmith API key (lsv2_pt_... or lsv2_sk_...)",
        r"lsv2_",
        r"(?-u:\b)(?P<s>lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})(?-u:\b)",
    ),
    vendor(
        "shopify_token",
        "Shopify access token or shared secret (shpat_, shpca_, shppa_, shpss_ and 32 hex digits)",
        r"shp(?:at|ca|pa|ss)_",
        r"(?-u:\b)(?P<s>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})(?-u:\b)",
    ),
    vendor(
        "digitalocean_token",
        "DigitalOcean token (dop_v1_, doo_v1_, dor_v1_ and 64 hex digits)",
        r"do[opr]_v1_",
        r"(?-u:\b)(?P<s>do[opr]_v1_[a-f0-9]{64})(?-u:\b)",
    ),
    vendor(
        "mailchimp_api_key",
        "Mailchimp API key (32 hex digits and a -usN data-centre suffix)",
        r"-us[0-9]",
        r"(?-u:\b)(?P<s>[0-9a-f]{32}-us[0-9]{1,2})(?-u:\b)",
    ),
    vendor(
        "databricks_token",
        "Databricks personal access token (dapi and 32 hex digits)",
        r"dapi[0-9a-f]",
        r"(?-u:\b)(?P<s>dapi[a-f0-9]{32}(?:-[0-9])?)(?-u:\b)",
    ),
    vendor(
        "postman_api_key",
        "Postman API key (PMAK-...)",
        r"PMAK-",
        r"(?-u:\b)(?P<s>PMAK-[a-f0-9]{24}-[a-f0-9]{34})(?-u:\b)",
    ),
    vendor(
        "grafana_token",
        "Grafana Cloud token (glc_...) or service-account token (glsa_...)",
        r"gl(?:c|sa)_",
        r"(?-u:\b)(?P<s>glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[^A-Za-z0-9+/=_]|$)",
    ),
    vendor(
        "newrelic_key",
        "New Relic user API key (NRAK- and 27 characters)",
        r"NRAK-",
        r"(?-u:\b)(?P<s>NRAK-[A-Z0-9]{27})(?-u:\b)",
    ),
    vendor(
        "sentry_token",
        "Sentry organisation or user auth token (sntrys_..., sntryu_...)",
        r"sntry[su]_",
        r"(?-u:\b)(?P<s>sntrys_[A-Za-z0-9+/=_-]{60,}|sntryu_[a-f0-9]{64})",
    ),
    vendor(
        "vault_token",
        "HashiCorp Vault service or batch token (hvs., hvb.)",
        r"hv[sb]\.",
        r"(?-u:\b)(?P<s>hv[sb]\.[A-Za-z0-9_-]{24,})",
    ),
    vendor(
        "terraform_token",
        "Terraform Cloud / HCP Terraform API token (....atlasv1....)",
        r"\.atlasv1\.",
        r"(?-u:\b)(?P<s>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,})",
    ),
    vendor(
        "doppler_token",
        "Doppler token (dp.pt., dp.st., dp.sa., dp.ct., dp.scim., dp.audit.)",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.",
        r"(?-u:\b)(?P<s>dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})(?-u:\b)",
    ),
    vendor(
        "pulumi_token",
        "Pulumi access token (pul- and 40 hex digits)",
        r"pul-",
        r"(?-u:\b)(?P<s>pul-[a-f0-9]{40})(?-u:\b)",
    ),
    vendor(
        "supabase_token",
        "Supabase personal access token (sbp_ and 40 hex digits)",
        r"sbp_",
        r"(?-u:\b)(?P<s>sbp_[a-f0-9]{40})(?-u:\b)",
    ),
    vendor(
        "age_secret_key",
        "age encryption secret key (AGE-SECRET-KEY-1...)",
        r"AGE-SECRET-KEY-1",
        r"(?P<s>AGE-SECRET-KEY-1[0-9A-Z]{58})(?-u:\b)",
    ),
    vendor(
        "azure_ad_client_secret",
        "Microsoft Entra ID (Azure AD) client secret (...Q~...)",
        r"[0-9]Q~",
        r"(?:^|[^A-Za-z0-9_~.-])(?P<s>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
    ),
    vendor(
        "mapbox_token",
        "Mapbox secret access token (sk.eyJ...)",
        r"sk\.eyJ",
        r"(?-u:\b)(?P<s>sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,})",
    ),
    vendor(
        "square_token",
        "Square access token or OAuth secret (sq0atp-, sq0csp-)",
        r"sq0(?:atp|csp)-",
        r"(?-u:\b)(?P<s>sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43})(?:[^0-9A-Za-z_-]|$)",
    ),
    vendor(
        "linear_api_key",
        "Linear API key (lin_api_ and 40 characters)",
        r"lin_api_",
        r"(?-u:\b)(?P<s>lin_api_[A-Za-z0-9]{40})(?-u:\b)",
    ),
    vendor(
        "atlassian_api_token",
        "Atlassian API token (ATATT3...)",
        r"ATATT3",
        r"(?-u:\b)(?P<s>ATATT3[A-Za-z0-9_=-]{150,})",
    ),
    vendor(
        "heroku_token",
        "Heroku platform API token (HRKU- and 40 or more characters)",
        r"HRKU-",
        r"(?-u:\b)(?P<s>HRKU-[A-Za-z0-9_-]{40,100})(?:[^A-Za-z0-9_-]|$)",
    ),
    vendor(
        "mailgun_api_key",
        "Mailgun API key (32 hex digits, then 8 and 8 after hyphens, in a text that names Mailgun or an API key; or key- and 32 hex digits)",
        // (A prefilter on the key's own shape, which starts at any hex digit, kept a thread of
        // the one pass alive at most bytes of every text: the key is looked for where Mailgun
        // or an API key is named.)
        r"(?i-u)mailgun|api[_. -]?key|key-[0-9a-f]{8}",
        r"(?-u:\b)(?P<s>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}|key-[0-9a-f]{32})(?-u:\b)",
    ),
    vendor(
        "telegram_bot_token",
        "Telegram bot token (bot id, a colon, AA and 33 characters), also inside an API URL",
        r":AA",
        r"(?:^|[^0-9A-Za-z])(?:bot)?(?P<s>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)",
    ),
];
