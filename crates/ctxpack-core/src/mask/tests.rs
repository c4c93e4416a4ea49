use super::*;

/// The rule set's expressions are pinned to [`MASK_RULES_VERSION`]: stored text records the
/// version it was masked by, and a pack trusts text stored under the current version not
/// to need masking again, so changing a rule's kind, prefilter or expression without a new
/// version would let stores indexed before the change show what the new rule catches.
/// (A change to a rule's validating code needs the same bump; no digest sees it.)
#[test]
fn the_rules_are_the_ones_their_version_names() {
    // FNV-1a over every rule's kind, prefilter and expression, in order: stable across
    // Rust releases, unlike the standard library's hasher.
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    for spec in specs() {
        for part in [spec.kind, spec.prefilter, spec.pattern] {
            for byte in part.bytes().chain([0]) {
                digest = (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    assert_eq!(
        (MASK_RULES_VERSION, digest),
        (45, 0x3daa_11da_b183_e963),
        "the rules changed: bump MASK_RULES_VERSION, then pin it here with the new digest"
    );
}

/// Masks `input` and compares with `expected`; `None` means "unchanged and borrowed".
/// Every case is also checked for idempotence.
#[track_caller]
fn check(masker: &Masker, input: &str, expected: Option<&str>) {
    let (masked, counts) = masker.mask(input);
    match expected {
        None => {
            assert!(
                matches!(masked, Cow::Borrowed(_)),
                "expected no change for {input:?}, got {masked:?}"
            );
            assert!(
                counts.is_empty(),
                "expected no counts for {input:?}, got {counts:?}"
            );
        }
        Some(expected) => {
            assert_eq!(masked, expected, "masking {input:?}");
            assert!(!counts.is_empty());
        }
    }
    let (again, again_counts) = masker.mask(&masked);
    assert_eq!(again, masked, "masking is not idempotent for {input:?}");
    assert!(matches!(again, Cow::Borrowed(_)));
    assert!(
        again_counts.is_empty(),
        "second pass counted {again_counts:?} for {input:?}"
    );
}

/// (kind, input, expected output or `None` for a near miss that must stay unchanged).
/// Positive cases must produce exactly one redaction of `kind`.
const CASES: &[(&str, &str, Option<&str>)] = &[
    // consul_token
    (
        "consul_token",
        "acl {\n  tokens {\n    initial_management = \"be454c9c-1173-41ab-98f1-5f8227fd5d43\"\n  }\n}\n",
        Some("acl {\n  tokens {\n    initial_management = \"[REDACTED:consul_token]\"\n  }\n}\n"),
    ),
    (
        "consul_token",
        "{\"acl\": {\"tokens\": {\"agent\": \"5f8c6f86-63d6-4337-88aa-8ddaed68d7df\"}}}",
        Some("{\"acl\": {\"tokens\": {\"agent\": \"[REDACTED:consul_token]\"}}}"),
    ),
    // A generic name outside a tokens block, or one the block closed before, is an id.
    (
        "consul_token",
        "tokens { agent = \"x\" }\nservice {\n  default = \"5f8c6f86-63d6-4337-88aa-8ddaed68d7df\"\n}\n",
        None,
    ),
    (
        "consul_token",
        "tokens {\n  default = \"00000000-0000-0000-0000-000000000002\"\n}\n",
        None,
    ),
    // private_key
    (
        "private_key",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAfakefakefakefakefake0123\nZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQ==\n-----END RSA PRIVATE KEY-----\nnext line\n",
        Some("key:\n[REDACTED:private_key]\nnext line\n"),
    ),
    (
        "private_key",
        r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAfake\nZmFrZWtleQ==\n-----END PRIVATE KEY-----\n", "x": 1}"#,
        Some(r#"{"private_key": "[REDACTED:private_key]\n", "x": 1}"#),
    ),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\r\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQfake\r\n-----END OPENSSH PRIVATE KEY-----",
        Some("[REDACTED:private_key]"),
    ),
    (
        "private_key",
        "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FAKE\n\nMHcCAQEEIFAKEfakeFAKEfake0123456789\nMoreFakeBase64Lines0123456789abcd",
        Some("[REDACTED:private_key]"),
    ),
    (
        "private_key",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAAfake\nZmFrZWtleWZha2VrZXlmYWtla2V5\n-----END PRIVATE KEY-----\ntail",
        Some("[REDACTED:private_key]\ntail"),
    ),
    (
        "private_key",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgfake\n-----END PUBLIC KEY-----\n",
        None,
    ),
    (
        "private_key",
        "const BEGIN: &str = \"-----BEGIN RSA PRIVATE KEY-----\";\nconst END: &str = \"-----END RSA PRIVATE KEY-----\";\n",
        None,
    ),
    // anthropic_api_key
    (
        "anthropic_api_key",
        "ANTHROPIC_API_KEY=sk-ant-api03-FAKEfake0123456789FAKEfake0123456789-abcdAA\n",
        Some("ANTHROPIC_API_KEY=[REDACTED:anthropic_api_key]\n"),
    ),
    (
        "anthropic_api_key",
        "client = Anthropic(api_key=\"sk-ant-admin01-FAKEfake0123456789FAKEfake\")",
        Some("client = Anthropic(api_key=\"[REDACTED:anthropic_api_key]\")"),
    ),
    ("anthropic_api_key", "prefix is sk-ant-short", None),
    // openai_api_key
    (
        "openai_api_key",
        "OPENAI_API_KEY=sk-proj-FAKEfake0123456789FAKEfake0123456789abcd",
        Some("OPENAI_API_KEY=[REDACTED:openai_api_key]"),
    ),
    (
        "openai_api_key",
        "openai.api_key = \"sk-FAKEfake0123456789FAKET3BlbkFJfake0123456789abcd\"",
        Some("openai.api_key = \"[REDACTED:openai_api_key]\""),
    ),
    (
        "openai_api_key",
        "<div class=\"sk-some-long-css-class-name-without-digits\">",
        None,
    ),
    (
        "openai_api_key",
        "task-FAKEfake0123456789FAKEfake0123456789abcd",
        None,
    ),
    // aws_access_key_id
    (
        "aws_access_key_id",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
        Some("aws_access_key_id = [REDACTED:aws_access_key_id]\n"),
    ),
    (
        "aws_access_key_id",
        r#"{"AccessKeyId": "ASIAY34FZKBOKMUTVV7A"}"#,
        Some(r#"{"AccessKeyId": "[REDACTED:aws_access_key_id]"}"#),
    ),
    (
        "aws_access_key_id",
        "id AKIAIOSFODNN7EXAMPLEX and AKIA1234567890123456",
        None,
    ),
    // aws_secret_access_key
    (
        "aws_secret_access_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        Some("aws_secret_access_key = [REDACTED:aws_secret_access_key]\n"),
    ),
    (
        "aws_secret_access_key",
        r#""SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","#,
        Some(r#""SecretAccessKey": "[REDACTED:aws_secret_access_key]","#),
    ),
    (
        "aws_secret_access_key",
        "checksum = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        None,
    ),
    (
        "aws_secret_access_key",
        "AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}",
        None,
    ),
    // github_token
    (
        "github_token",
        "token = \"ghp_FAKEfake0123456789FAKEfake0123456789\"",
        Some("token = \"[REDACTED:github_token]\""),
    ),
    (
        "github_token",
        "git clone https://x-access-token:ghs_FAKEfake0123456789FAKEfake0123456789@github.com/o/r",
        Some("git clone https://x-access-token:[REDACTED:github_token]@github.com/o/r"),
    ),
    (
        "github_token",
        "use github_pat_11FAKEFAKE0123456789ab_FAKEfake0123456789FAKEfake0123456789 here",
        Some("use [REDACTED:github_token] here"),
    ),
    (
        "github_token",
        "ghp_short and ghx_FAKEfake0123456789FAKEfake0123456789",
        None,
    ),
    // gitlab_token
    (
        "gitlab_token",
        "GITLAB_TOKEN: glpat-FAKEfake0123456789ab\n",
        Some("GITLAB_TOKEN: [REDACTED:gitlab_token]\n"),
    ),
    (
        "gitlab_token",
        "curl --header \"PRIVATE-TOKEN: glpat-FAKE_fake-0123456789xyz\" https://gitlab.example.com",
        Some("curl --header \"PRIVATE-TOKEN: [REDACTED:gitlab_token]\" https://gitlab.example.com"),
    ),
    ("gitlab_token", "see glpat-short for details", None),
    // slack_token
    (
        "slack_token",
        "SLACK_BOT_TOKEN=xoxb-1234567890-1234567890123-FAKEfakeFAKEfakeFAKEfake",
        Some("SLACK_BOT_TOKEN=[REDACTED:slack_token]"),
    ),
    (
        "slack_token",
        "app token xapp-1-A0FAKE0FAKE-1234567890123-fakefakefakefake0123 ok",
        Some("app token [REDACTED:slack_token] ok"),
    ),
    (
        "slack_token",
        "export SLACK_TOKEN=\"xoxb-your-bot-token\"",
        None,
    ),
    // stripe_key
    (
        "stripe_key",
        "Stripe.api_key = 'sk_live_FAKEfake0123456789FAKEfake'",
        Some("Stripe.api_key = '[REDACTED:stripe_key]'"),
    ),
    (
        "stripe_key",
        "STRIPE_RESTRICTED=rk_live_FAKEfake0123456789FAKEfake",
        Some("STRIPE_RESTRICTED=[REDACTED:stripe_key]"),
    ),
    (
        "stripe_key",
        "test mode uses sk_test_FAKEfake0123456789FAKEfake",
        None,
    ),
    // google_api_key
    (
        "google_api_key",
        "const key = \"AIzaSyFAKE-fake_0123456789abcdefghijklm\";",
        Some("const key = \"[REDACTED:google_api_key]\";"),
    ),
    (
        "google_api_key",
        "https://maps.googleapis.com/maps/api/js?key=AIzaSyFAKE-fake_0123456789abcdefghijklm&callback=x",
        Some("https://maps.googleapis.com/maps/api/js?key=[REDACTED:google_api_key]&callback=x"),
    ),
    (
        "google_api_key",
        "AIzaSyFAKE-fake_0123456789abcdefghijkl is one short",
        None,
    ),
    // jwt
    (
        "jwt",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.fakeSignature0123456789\n",
        Some("Authorization: Bearer [REDACTED:jwt]\n"),
    ),
    (
        "jwt",
        "{\"id_token\": \"eyJhbGciOiJub25lIn0.eyJzdWIiOiJmYWtlIn0.\"}",
        Some("{\"id_token\": \"[REDACTED:jwt]\"}"),
    ),
    (
        "jwt",
        "the header eyJhbGciOiJIUzI1NiJ9 alone is not a token",
        None,
    ),
    // connection_string_password
    (
        "connection_string_password",
        "DATABASE_URL=postgres://app:s3cr3tPass@db.internal:5432/app",
        Some(
            "DATABASE_URL=postgres://app:[REDACTED:connection_string_password]@db.internal:5432/app",
        ),
    ),
    (
        "connection_string_password",
        "uri = \"mongodb+srv://admin:Fake%40Pass1@cluster0.example.net/?retryWrites=true\"",
        Some(
            "uri = \"mongodb+srv://admin:[REDACTED:connection_string_password]@cluster0.example.net/?retryWrites=true\"",
        ),
    ),
    (
        "connection_string_password",
        "REDIS_URL=redis://:fakepass123@localhost:6379/0",
        Some("REDIS_URL=redis://:[REDACTED:connection_string_password]@localhost:6379/0"),
    ),
    (
        "connection_string_password",
        "postgres://app@db.internal/app and http://localhost:8080/x@y",
        None,
    ),
    (
        "connection_string_password",
        "url: mysql://root:${MYSQL_ROOT_PASSWORD}@db:3306/app",
        None,
    ),
    (
        "connection_string_password",
        "amqp://user:password@localhost:5672/",
        None,
    ),
    (
        "connection_string_password",
        "/// format: scheme://[user[:password]@]host[:port]/path",
        None,
    ),
    // password_assignment
    (
        "password_assignment",
        "user default off\nuser worker on >Rq8sLm2VxTz4Kp ~jobs:* +@list\n",
        Some("user default off\nuser worker on >[REDACTED:password_assignment] ~jobs:* +@list\n"),
    ),
    (
        "password_assignment",
        "ACL SETUSER reporter on >Hw5kQz9LmVt2Xr ~reports:* +get\n",
        Some("ACL SETUSER reporter on >[REDACTED:password_assignment] ~reports:* +get\n"),
    ),
    (
        "password_assignment",
        "user default on nopass ~* +@all\nuser ci on #8f3a9c2b7e1d4f6a0b5c8e2d9f1a3b7c8f3a9c2b7e1d4f6a0b5c8e2d9f1a3b7c ~* +@read\nuser app on >changeme ~* +@all\necho done > /tmp/x\n",
        None,
    ),
    (
        "password_assignment",
        "password = \"hunter2\"",
        Some("password = \"[REDACTED:password_assignment]\""),
    ),
    (
        "password_assignment",
        "DB_PASSWORD=s3cr3t!pass\n",
        Some("DB_PASSWORD=[REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        r#"{"client_secret": "fake-secret-0123", "client_id": "abc"}"#,
        Some(r#"{"client_secret": "[REDACTED:password_assignment]", "client_id": "abc"}"#),
    ),
    (
        "password_assignment",
        "  api_key: abc123def456\n",
        Some("  api_key: [REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "GET /cb?access_token=abc123xyz&state=1",
        Some("GET /cb?access_token=[REDACTED:password_assignment]&state=1"),
    ),
    (
        "password_assignment",
        "Server=db;User Id=sa;Password=FakePassword;Encrypt=true",
        Some("Server=db;User Id=sa;Password=[REDACTED:password_assignment];Encrypt=true"),
    ),
    (
        "password_assignment",
        "  POSTGRES_PASSWORD: postgres\n",
        Some("  POSTGRES_PASSWORD: [REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "String secretKey = \"Zm9vYmFyYmF6\";",
        Some("String secretKey = \"[REDACTED:password_assignment]\";"),
    ),
    (
        "password_assignment",
        "mysql --user=root --password=Fake#Pass9 db",
        Some("mysql --user=root --password=[REDACTED:password_assignment] db"),
    ),
    (
        "password_assignment",
        "'token' => 'FAKEfake0123',",
        Some("'token' => '[REDACTED:password_assignment]',"),
    ),
    ("password_assignment", "password = get_password()", None),
    ("password_assignment", "token = self.token", None),
    (
        "password_assignment",
        "const token = process.env.API_TOKEN;",
        None,
    ),
    (
        "password_assignment",
        "password = os.environ[\"DB_PASSWORD\"]",
        None,
    ),
    ("password_assignment", "token := os.Getenv(\"TOKEN\")", None),
    (
        "password_assignment",
        "password: ${DB_PASSWORD}\nsecret: $SECRET_VALUE\n",
        None,
    ),
    (
        "password_assignment",
        "password = \"<your-password>\"\napi_key: YOUR_API_KEY\n",
        None,
    ),
    (
        "password_assignment",
        "password: changeme\nsecret = \"********\"\n",
        None,
    ),
    (
        "password_assignment",
        "password = None\ntoken = null\nsecret: \"\"\n",
        None,
    ),
    (
        "password_assignment",
        "password = \"[REDACTED:password_assignment]\"",
        None,
    ),
    (
        "password_assignment",
        "max_tokens: 100000\nmax_token = 100000\n",
        None,
    ),
    (
        "password_assignment",
        "fn new(token: &str, secret: Option<String>) {}",
        None,
    ),
    (
        "password_assignment",
        "    token: Token,\n    password: String,\n",
        None,
    ),
    (
        "password_assignment",
        "def login(password: str) -> None:",
        None,
    ),
    (
        "password_assignment",
        "if password == \"hunter22\" {}",
        None,
    ),
    ("password_assignment", "let kind = token::Kind;", None),
    (
        "password_assignment",
        "grant = {\"token_type\": \"refresh_token\", \"header\": \"X-Api-Key\"}",
        None,
    ),
    (
        "password_assignment",
        "password = \"Enter your password\"",
        None,
    ),
    (
        "password_assignment",
        "PWD=/home/user/project\nsecret_file: /run/secrets/db\n",
        None,
    ),
    (
        "password_assignment",
        "Token: the bearer credential for requests",
        None,
    ),
    ("password_assignment", "password = user_password", None),
    (
        "password_assignment",
        "pub const IFLA_INET6_TOKEN: _bindgen_ty_7 = _bindgen_ty_7::IFLA_INET6_TOKEN;\nstatic NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);",
        None,
    ),
    (
        "password_assignment",
        "let mut add_token = |token: &Token| {};\npToken: *const c_char,",
        None,
    ),
    (
        "password_assignment",
        "let token = token?;\nlet mut token = self.next_token?;",
        None,
    ),
    (
        "password_assignment",
        "pExpr->u.zToken = \"coalesce\";\nnToken = iEnd-iStart;",
        None,
    ),
    // Rules and widenings of rule-set version 2 (fake values with real shapes).
    (
        "google_oauth_token",
        "GOOGLE_CLIENT_SECRET=GOCSPX-FAKEd55virF5xkPOJqNArkiNanQ1\n",
        Some("GOOGLE_CLIENT_SECRET=[REDACTED:google_oauth_token]\n"),
    ),
    (
        "google_oauth_token",
        "client = connect(key=\"GOCSPX-FAKEd55virF5xkPOJqNArkiNanQ1\")",
        Some("client = connect(key=\"[REDACTED:google_oauth_token]\")"),
    ),
    (
        "google_oauth_token",
        "see GOCSPX-tooShort123 in the docs",
        None,
    ),
    (
        "sendgrid_api_key",
        "SENDGRID_API_KEY=SG.FAKEEsSJj-M5VB4gbxLwW9.FAKEIyonYMWPEA8hiBVP-xP-z2z4rtGGvk3Tk_yBj_t\n",
        Some("SENDGRID_API_KEY=[REDACTED:sendgrid_api_key]\n"),
    ),
    (
        "sendgrid_api_key",
        "client = connect(key=\"SG.FAKEEsSJj-M5VB4gbxLwW9.FAKEIyonYMWPEA8hiBVP-xP-z2z4rtGGvk3Tk_yBj_t\")",
        Some("client = connect(key=\"[REDACTED:sendgrid_api_key]\")"),
    ),
    (
        "sendgrid_api_key",
        "see SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
        None,
    ),
    (
        "twilio_api_key",
        "TWILIO_API_KEY_SID=SKdeadbeeff54a2989d5e52e2a3c6439ed\n",
        Some("TWILIO_API_KEY_SID=[REDACTED:twilio_api_key]\n"),
    ),
    (
        "twilio_api_key",
        "client = connect(key=\"SKdeadbeeff54a2989d5e52e2a3c6439ed\")",
        Some("client = connect(key=\"[REDACTED:twilio_api_key]\")"),
    ),
    (
        "twilio_api_key",
        "see ACdeadbeeffb81df82a1804225f969f1a6 in the docs",
        None,
    ),
    (
        "twilio_auth_token",
        "client = Client(\"ACdeadbeef0123456789abcdef01234567\", \"fedcba9876543210fedcba9876543210\")",
        Some(
            "client = Client(\"ACdeadbeef0123456789abcdef01234567\", \"[REDACTED:twilio_auth_token]\")",
        ),
    ),
    (
        "twilio_auth_token",
        "Twilio.init('ACdeadbeef0123456789abcdef01234567', auth_token='0f1e2d3c4b5a69788796a5b4c3d2e1f0')",
        Some(
            "Twilio.init('ACdeadbeef0123456789abcdef01234567', auth_token='[REDACTED:twilio_auth_token]')",
        ),
    ),
    (
        "twilio_auth_token",
        "client = Client(\"ACdeadbeef0123456789abcdef01234567\", os.environ[\"TWILIO_AUTH_TOKEN\"])",
        None,
    ),
    (
        "discord_bot_token",
        "client.run(\"MTA5ODc2NTQzMjEwOTg3NjU0Mw.GdEaBc.k3yZxWvUtSrQpOnMlKjIhGfEdCbA9876543\")",
        Some("client.run(\"[REDACTED:discord_bot_token]\")"),
    ),
    (
        "discord_bot_token",
        "client.login('NzkyNzE1NDU0MTk2MDg4ODQy.X-hvzA.Ovy4MCQywSkoMRRclStW4xAYK7I');",
        Some("client.login('[REDACTED:discord_bot_token]');"),
    ),
    (
        "discord_bot_token",
        "app.run('NzkyNzE1NDU0MTk2MDg4ODQy.X-hvzA')",
        None,
    ),
    (
        "npm_token",
        "NPM_TOKEN=npm_FAKEeYSbNJBAPohKeZgZEceWAvRMjaf1cxis\n",
        Some("NPM_TOKEN=[REDACTED:npm_token]\n"),
    ),
    (
        "npm_token",
        "client = connect(key=\"npm_FAKEeYSbNJBAPohKeZgZEceWAvRMjaf1cxis\")",
        Some("client = connect(key=\"[REDACTED:npm_token]\")"),
    ),
    (
        "npm_token",
        "see npm_install_dependencies_for_the_workspace in the docs",
        None,
    ),
    (
        "pypi_token",
        "TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmcFAKE16FUikyrspUWIpsvQX25vkP-H9Rp58tva7BS-SdeIn_oJjNnZLwAC651\n",
        Some("TWINE_PASSWORD=[REDACTED:pypi_token]\n"),
    ),
    (
        "pypi_token",
        "client = connect(key=\"pypi-AgEIcHlwaS5vcmcFAKE16FUikyrspUWIpsvQX25vkP-H9Rp58tva7BS-SdeIn_oJjNnZLwAC651\")",
        Some("client = connect(key=\"[REDACTED:pypi_token]\")"),
    ),
    ("pypi_token", "see pypi-AgEshort in the docs", None),
    (
        "dockerhub_token",
        "DOCKERHUB_TOKEN=dckr_pat_FAKE1En8WOXm_wWmEz4SWSTAB2-\n",
        Some("DOCKERHUB_TOKEN=[REDACTED:dockerhub_token]\n"),
    ),
    (
        "dockerhub_token",
        "client = connect(key=\"dckr_pat_FAKE1En8WOXm_wWmEz4SWSTAB2-\")",
        Some("client = connect(key=\"[REDACTED:dockerhub_token]\")"),
    ),
    (
        "dockerhub_token",
        "see dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
        None,
    ),
    (
        "huggingface_token",
        "HF_TOKEN=hf_FAKEirFlLqLYdoGVyrBjiXRsHpniLVFbwI\n",
        Some("HF_TOKEN=[REDACTED:huggingface_token]\n"),
    ),
    (
        "huggingface_token",
        "client = connect(key=\"hf_FAKEirFlLqLYdoGVyrBjiXRsHpniLVFbwI\")",
        Some("client = connect(key=\"[REDACTED:huggingface_token]\")"),
    ),
    (
        "huggingface_token",
        "see hf_hub_download_and_cache_the_modelx in the docs",
        None,
    ),
    (
        "groq_api_key",
        "GROQ_API_KEY=gsk_FAKEwxEvpIOyWt0yT93Nzih1FH5xDgCaulXZhhIzBIsExu5MRBch\n",
        Some("GROQ_API_KEY=[REDACTED:groq_api_key]\n"),
    ),
    (
        "groq_api_key",
        "client = connect(key=\"gsk_FAKEwxEvpIOyWt0yT93Nzih1FH5xDgCaulXZhhIzBIsExu5MRBch\")",
        Some("client = connect(key=\"[REDACTED:groq_api_key]\")"),
    ),
    (
        "groq_api_key",
        "see gsk_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
        None,
    ),
    (
        "replicate_token",
        "REPLICATE_API_TOKEN=r8_FAKElq2i3sSPDrjWuOtTr7loYuVJo9cX7Rbyx\n",
        Some("REPLICATE_API_TOKEN=[REDACTED:replicate_token]\n"),
    ),
    (
        "replicate_token",
        "client = connect(key=\"r8_FAKElq2i3sSPDrjWuOtTr7loYuVJo9cX7Rbyx\")",
        Some("client = connect(key=\"[REDACTED:replicate_token]\")"),
    ),
    ("replicate_token", "see r8_short0123 in the docs", None),
    (
        "perplexity_api_key",
        "PPLX_API_KEY=pplx-FAKEkPtlXsj8dn3puAJKBPtvaXcq4GAW6suAMXqPbUMI2yE9\n",
        Some("PPLX_API_KEY=[REDACTED:perplexity_api_key]\n"),
    ),
    (
        "perplexity_api_key",
        "client = connect(key=\"pplx-FAKEkPtlXsj8dn3puAJKBPtvaXcq4GAW6suAMXqPbUMI2yE9\")",
        Some("client = connect(key=\"[REDACTED:perplexity_api_key]\")"),
    ),
    (
        "perplexity_api_key",
        "see pplx-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX in the docs",
        None,
    ),
    (
        "xai_api_key",
        "XAI_API_KEY=xai-FAKEXtBm6nSqusBdNOJVHMeznqvRwYu4tzQLf1EE8WlSwlP58KMJJYnTBV86S6KzxsmhYOs6SArB1w3o\n",
        Some("XAI_API_KEY=[REDACTED:xai_api_key]\n"),
    ),
    (
        "xai_api_key",
        "client = connect(key=\"xai-FAKEXtBm6nSqusBdNOJVHMeznqvRwYu4tzQLf1EE8WlSwlP58KMJJYnTBV86S6KzxsmhYOs6SArB1w3o\")",
        Some("client = connect(key=\"[REDACTED:xai_api_key]\")"),
    ),
    ("xai_api_key", "see xai-grok-model-name in the docs", None),
    (
        "langsmith_api_key",
        "LANGSMITH_API_KEY=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\n",
        Some("LANGSMITH_API_KEY=[REDACTED:langsmith_api_key]\n"),
    ),
    (
        "langsmith_api_key",
        "client = connect(key=\"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\")",
        Some("client = connect(key=\"[REDACTED:langsmith_api_key]\")"),
    ),
    (
        "langsmith_api_key",
        "see lsv2_pt_deadbeefd236fec6beaf in the docs",
        None,
    ),
    (
        "shopify_token",
        "SHOPIFY_TOKEN=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\n",
        Some("SHOPIFY_TOKEN=[REDACTED:shopify_token]\n"),
    ),
    (
        "shopify_token",
        "client = connect(key=\"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\")",
        Some("client = connect(key=\"[REDACTED:shopify_token]\")"),
    ),
    (
        "shopify_token",
        "see shpat_deadbeef8d287f34 in the docs",
        None,
    ),
    (
        "digitalocean_token",
        "DIGITALOCEAN_TOKEN=dop_v1_deadbeef62ba12e5daeea9213c38f247c45576e85d68272726b12d922e42b6c2\n",
        Some("DIGITALOCEAN_TOKEN=[REDACTED:digitalocean_token]\n"),
    ),
    (
        "digitalocean_token",
        "client = connect(key=\"dop_v1_deadbeef62ba12e5daeea9213c38f247c45576e85d68272726b12d922e42b6c2\")",
        Some("client = connect(key=\"[REDACTED:digitalocean_token]\")"),
    ),
    (
        "digitalocean_token",
        "see dop_v1_deadbeefa3ac3cec24773db77c58e8 in the docs",
        None,
    ),
    (
        "mailchimp_api_key",
        "MAILCHIMP_KEY=deadbeef0645a9c06c4dbfd608736a82-us21\n",
        Some("MAILCHIMP_KEY=[REDACTED:mailchimp_api_key]\n"),
    ),
    (
        "mailchimp_api_key",
        "client = connect(key=\"deadbeef0645a9c06c4dbfd608736a82-us21\")",
        Some("client = connect(key=\"[REDACTED:mailchimp_api_key]\")"),
    ),
    ("mailchimp_api_key", "see region-us21 in the docs", None),
    (
        "databricks_token",
        "DATABRICKS_TOKEN=dapideadbeef194e6f3391fa920a5db423c2\n",
        Some("DATABRICKS_TOKEN=[REDACTED:databricks_token]\n"),
    ),
    (
        "databricks_token",
        "client = connect(key=\"dapideadbeef194e6f3391fa920a5db423c2\")",
        Some("client = connect(key=\"[REDACTED:databricks_token]\")"),
    ),
    (
        "databricks_token",
        "see dapi_client_version in the docs",
        None,
    ),
    (
        "postman_api_key",
        "POSTMAN_API_KEY=PMAK-deadbeefc6420d4b4ea6f665-deadbeef6457288688eed230a426a881d7\n",
        Some("POSTMAN_API_KEY=[REDACTED:postman_api_key]\n"),
    ),
    (
        "postman_api_key",
        "client = connect(key=\"PMAK-deadbeefc6420d4b4ea6f665-deadbeef6457288688eed230a426a881d7\")",
        Some("client = connect(key=\"[REDACTED:postman_api_key]\")"),
    ),
    ("postman_api_key", "see PMAK-deadbeef51 in the docs", None),
    (
        "grafana_token",
        "GRAFANA_TOKEN=glsa_FAKEBbHdtAizNtDaQxO4JoI23gtn2XSW_deadbeef\n",
        Some("GRAFANA_TOKEN=[REDACTED:grafana_token]\n"),
    ),
    (
        "grafana_token",
        "client = connect(key=\"glsa_FAKEBbHdtAizNtDaQxO4JoI23gtn2XSW_deadbeef\")",
        Some("client = connect(key=\"[REDACTED:grafana_token]\")"),
    ),
    ("grafana_token", "see glsa_short_deadbeef in the docs", None),
    (
        "newrelic_key",
        "NEW_RELIC_API_KEY=NRAK-FAKEMV0L89GZ1WBW8M52PD6TD68\n",
        Some("NEW_RELIC_API_KEY=[REDACTED:newrelic_key]\n"),
    ),
    (
        "newrelic_key",
        "client = connect(key=\"NRAK-FAKEMV0L89GZ1WBW8M52PD6TD68\")",
        Some("client = connect(key=\"[REDACTED:newrelic_key]\")"),
    ),
    ("newrelic_key", "see NRAK-SHORT in the docs", None),
    (
        "sentry_token",
        "SENTRY_AUTH_TOKEN=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\n",
        Some("SENTRY_AUTH_TOKEN=[REDACTED:sentry_token]\n"),
    ),
    (
        "sentry_token",
        "client = connect(key=\"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\")",
        Some("client = connect(key=\"[REDACTED:sentry_token]\")"),
    ),
    (
        "sentry_token",
        "see sntryu_deadbeefbe460d786e34 in the docs",
        None,
    ),
    (
        "vault_token",
        "VAULT_TOKEN=hvs.FAKEuNzJ6C4QDbZBtK12fFbYjfSQAyvYZM6uniUw-locKvQqT9sXQ4reoNE4oQWfUGcHmrCaEzUq3LP4lU3GVU51bR\n",
        Some("VAULT_TOKEN=[REDACTED:vault_token]\n"),
    ),
    (
        "vault_token",
        "client = connect(key=\"hvs.FAKEuNzJ6C4QDbZBtK12fFbYjfSQAyvYZM6uniUw-locKvQqT9sXQ4reoNE4oQWfUGcHmrCaEzUq3LP4lU3GVU51bR\")",
        Some("client = connect(key=\"[REDACTED:vault_token]\")"),
    ),
    ("vault_token", "see hvs.short in the docs", None),
    (
        "terraform_token",
        "TF_TOKEN_app_terraform_io=FAKEAAbpu3TyLV.atlasv1.FAKE801KfuajL15lvs-x7oLmc7oYNCnvNx9NeOM1_XBWEjnz9bAfewn4TPBbd4spI0b\n",
        Some("TF_TOKEN_app_terraform_io=[REDACTED:terraform_token]\n"),
    ),
    (
        "terraform_token",
        "client = connect(key=\"FAKEAAbpu3TyLV.atlasv1.FAKE801KfuajL15lvs-x7oLmc7oYNCnvNx9NeOM1_XBWEjnz9bAfewn4TPBbd4spI0b\")",
        Some("client = connect(key=\"[REDACTED:terraform_token]\")"),
    ),
    ("terraform_token", "see x.atlasv1.y in the docs", None),
    (
        "doppler_token",
        "DOPPLER_TOKEN=dp.st.FAKEt8VPot3wD2UoChJZnQFxPLsYqB9wZfwDCEUIyQh\n",
        Some("DOPPLER_TOKEN=[REDACTED:doppler_token]\n"),
    ),
    (
        "doppler_token",
        "client = connect(key=\"dp.st.FAKEt8VPot3wD2UoChJZnQFxPLsYqB9wZfwDCEUIyQh\")",
        Some("client = connect(key=\"[REDACTED:doppler_token]\")"),
    ),
    ("doppler_token", "see dp.st.dev in the docs", None),
    (
        "pulumi_token",
        "PULUMI_ACCESS_TOKEN=pul-deadbeef0c00b0e695a97fb333db700394a428a4\n",
        Some("PULUMI_ACCESS_TOKEN=[REDACTED:pulumi_token]\n"),
    ),
    (
        "pulumi_token",
        "client = connect(key=\"pul-deadbeef0c00b0e695a97fb333db700394a428a4\")",
        Some("client = connect(key=\"[REDACTED:pulumi_token]\")"),
    ),
    ("pulumi_token", "see pul-deadbeef35fe in the docs", None),
    (
        "supabase_token",
        "SUPABASE_ACCESS_TOKEN=sbp_deadbeef8445c5b7a346722fcc34450ff408fe51\n",
        Some("SUPABASE_ACCESS_TOKEN=[REDACTED:supabase_token]\n"),
    ),
    (
        "supabase_token",
        "client = connect(key=\"sbp_deadbeef8445c5b7a346722fcc34450ff408fe51\")",
        Some("client = connect(key=\"[REDACTED:supabase_token]\")"),
    ),
    ("supabase_token", "see sbp_deadbeef1d90 in the docs", None),
    (
        "age_secret_key",
        "SOPS_AGE_KEY=AGE-SECRET-KEY-1FAKE8UHDKL0XLACP0QSPJKKDHY3GNNG8KS89LAX7QLN8MVR66XV42DYJNG\n",
        Some("SOPS_AGE_KEY=[REDACTED:age_secret_key]\n"),
    ),
    (
        "age_secret_key",
        "client = connect(key=\"AGE-SECRET-KEY-1FAKE8UHDKL0XLACP0QSPJKKDHY3GNNG8KS89LAX7QLN8MVR66XV42DYJNG\")",
        Some("client = connect(key=\"[REDACTED:age_secret_key]\")"),
    ),
    (
        "age_secret_key",
        "see AGE-SECRET-KEY-1SHORT in the docs",
        None,
    ),
    (
        "azure_ad_client_secret",
        "AZURE_CLIENT_SECRET=FAK8Q~FAKEjfVpNAp0L1KcBIvC-RC72G3alvrX1N\n",
        Some("AZURE_CLIENT_SECRET=[REDACTED:azure_ad_client_secret]\n"),
    ),
    (
        "azure_ad_client_secret",
        "client = connect(key=\"FAK8Q~FAKEjfVpNAp0L1KcBIvC-RC72G3alvrX1N\")",
        Some("client = connect(key=\"[REDACTED:azure_ad_client_secret]\")"),
    ),
    (
        "azure_ad_client_secret",
        "see abc8Q~short in the docs",
        None,
    ),
    (
        "mapbox_token",
        "MAPBOX_SECRET_TOKEN=sk.eyJ1IjoiZmFrZSIsImEiOiJFAKEs8_YXNYb_UehVh8v.FAKEZTtjUoCzOTVBQnyR6V\n",
        Some("MAPBOX_SECRET_TOKEN=[REDACTED:mapbox_token]\n"),
    ),
    (
        "mapbox_token",
        "client = connect(key=\"sk.eyJ1IjoiZmFrZSIsImEiOiJFAKEs8_YXNYb_UehVh8v.FAKEZTtjUoCzOTVBQnyR6V\")",
        Some("client = connect(key=\"[REDACTED:mapbox_token]\")"),
    ),
    (
        "mapbox_token",
        "see pk.eyJ1IjoiZmFrZSIsImEiOiJFAKEuQSakZ5eQ9rbc_7D.FAKEbYk-GJ3dJKTPEmfAID in the docs",
        None,
    ),
    (
        "square_token",
        "SQUARE_SECRET=sq0csp-FAKEd7Otn3e26OJsScECiUwZvIVmnTMJsqb4tKyUjCC\n",
        Some("SQUARE_SECRET=[REDACTED:square_token]\n"),
    ),
    (
        "square_token",
        "client = connect(key=\"sq0csp-FAKEd7Otn3e26OJsScECiUwZvIVmnTMJsqb4tKyUjCC\")",
        Some("client = connect(key=\"[REDACTED:square_token]\")"),
    ),
    ("square_token", "see sq0atp-short in the docs", None),
    (
        "linear_api_key",
        "LINEAR_API_KEY=lin_api_FAKEDzZUCSiShg31VPoWchOHmGLJMyY5wSDk1S8O\n",
        Some("LINEAR_API_KEY=[REDACTED:linear_api_key]\n"),
    ),
    (
        "linear_api_key",
        "client = connect(key=\"lin_api_FAKEDzZUCSiShg31VPoWchOHmGLJMyY5wSDk1S8O\")",
        Some("client = connect(key=\"[REDACTED:linear_api_key]\")"),
    ),
    (
        "linear_api_key",
        "see lin_api_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
        None,
    ),
    (
        "atlassian_api_token",
        "JIRA_API_TOKEN=ATATT3xFfGF0FAKEJSW0gSerCNtpafpjozJwUlOpPWae1CU9SH0DHQToB4GYzgt7talWcmPxVLhUZ9B5-i2i9rn1spJFUVT5xmygXzHeMJgyho3AYRTcaE-rwL2ChSBiYKSFlQT4pNUt7lb0G5fAkORYc5HzL5LYxL07uJubugoaUtgnEUqTIg=DEADBEEF\n",
        Some("JIRA_API_TOKEN=[REDACTED:atlassian_api_token]\n"),
    ),
    (
        "atlassian_api_token",
        "client = connect(key=\"ATATT3xFfGF0FAKEJSW0gSerCNtpafpjozJwUlOpPWae1CU9SH0DHQToB4GYzgt7talWcmPxVLhUZ9B5-i2i9rn1spJFUVT5xmygXzHeMJgyho3AYRTcaE-rwL2ChSBiYKSFlQT4pNUt7lb0G5fAkORYc5HzL5LYxL07uJubugoaUtgnEUqTIg=DEADBEEF\")",
        Some("client = connect(key=\"[REDACTED:atlassian_api_token]\")"),
    ),
    ("atlassian_api_token", "see ATATT3short in the docs", None),
    (
        "telegram_bot_token",
        "TELEGRAM_BOT_TOKEN=1234567890:AAFAKEezi-tTrwiP8WvvCRrPA1vaSY4o5aj\n",
        Some("TELEGRAM_BOT_TOKEN=[REDACTED:telegram_bot_token]\n"),
    ),
    (
        "telegram_bot_token",
        "client = connect(key=\"1234567890:AAFAKEezi-tTrwiP8WvvCRrPA1vaSY4o5aj\")",
        Some("client = connect(key=\"[REDACTED:telegram_bot_token]\")"),
    ),
    (
        "telegram_bot_token",
        "see 12345678:ABFAKEFM7tZCazK5sEn63K5LOVOaylD7Dkc in the docs",
        None,
    ),
    (
        "password_hash",
        "admin:$apr1$FAKEsalt$FAKEoSEjoZZM1YTdNxxARE\n",
        Some("admin:[REDACTED:password_hash]\n"),
    ),
    (
        "password_hash",
        "hash = \"$2b$12$FAKE.UpkF0qMrPiqo2DwbU.4CfgdRi6o5JnDd3uusXyKAPIu/G0zE\"",
        Some("hash = \"[REDACTED:password_hash]\""),
    ),
    (
        "password_hash",
        "root:$6$rounds=5000$FAKEsalt$FAKEe7QOzrVY5zxk/NcZNqMwoIAaHcIGkiBXbApM1Sy2ClcO60UCt2QPtsvzGCiGP/PNwNtEa7FCTyOi2DqGqx:19000:0:99999:7:::",
        Some("root:[REDACTED:password_hash]:19000:0:99999:7:::"),
    ),
    (
        "password_hash",
        "let out = re.replace_all(text, \"$1$2\");\nroot:*:19000:0:99999:7:::",
        None,
    ),
    (
        "webhook_url",
        "url: https://hooks.slack.com/services/T0FAKE01/B0FAKE02/FAKE9F7wdn3esySRitejtezs",
        Some("url: https://hooks.slack.com/services/T0FAKE01/B0FAKE02/[REDACTED:webhook_url]"),
    ),
    (
        "webhook_url",
        "\"https://discord.com/api/webhooks/123456789012345678/FAKElgSRGfg-FN2hYSfHcKsJ9GWQUTduTaArEPaCmfU9SwbHEPxPZH8gShfDOaOOI091\"",
        Some("\"https://discord.com/api/webhooks/123456789012345678/[REDACTED:webhook_url]\""),
    ),
    (
        "webhook_url",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        None,
    ),
    (
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=FAKELpLm6o9ovSR60YrugRsoUx20oeYGzwO7DhkPOtukoy5F0y3Q0JyDE2Uh0GNq666kDWOweeLfUus33udtLu==;EndpointSuffix=core.windows.net",
        Some(
            "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=[REDACTED:azure_storage_key];EndpointSuffix=core.windows.net",
        ),
    ),
    (
        "azure_storage_key",
        "https://fake.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig=FAKEeIMhGoQKqzyKwgNK0Ih6w3yUCD4Rvp17OiiZ%3D",
        Some(
            "https://fake.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig=[REDACTED:azure_storage_key]",
        ),
    ),
    (
        "azure_storage_key",
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
        None,
    ),
    (
        "authorization_header",
        "curl -H \"Authorization: Bearer FAKELUiL9kj4zP62Y7QMvxIxVERzI2JJ0CmLBKtf\" https://api.example.com",
        Some(
            "curl -H \"Authorization: Bearer [REDACTED:authorization_header]\" https://api.example.com",
        ),
    ),
    (
        "authorization_header",
        "Authorization: Basic ZmFrZTpGYWtlLVBhc3MtMQ==\n",
        Some("Authorization: Basic [REDACTED:authorization_header]\n"),
    ),
    (
        "authorization_header",
        "sent headers {'auth': 'Bearer FAKEZRzTjboJ9caE13MS1njgT7UNwBdD'}",
        Some("sent headers {'auth': 'Bearer [REDACTED:authorization_header]'}"),
    ),
    (
        "authorization_header",
        "curl -H \"Authorization: Bearer $TOKEN\" -H 'Authorization: Bearer blahblahblah'\nauthorization: disabled\nBearer authentication is required\nAuthorization: Basic dXNlcm5hbWU6cGFzc3dvcmQ=",
        None,
    ),
    (
        "cli_password",
        "net use Z: \\\\fileserver\\finance /user:CORP\\svc_backup Wq7#pLk2Vx /persistent:no\r\n",
        Some(
            "net use Z: \\\\fileserver\\finance /user:CORP\\svc_backup [REDACTED:cli_password] /persistent:no\r\n",
        ),
    ),
    (
        "cli_password",
        "NET USE \\\\nas01\\backup \"Hk4 9!mTz\" /USER:nas01\\admin\r\n",
        Some("NET USE \\\\nas01\\backup \"[REDACTED:cli_password]\" /USER:nas01\\admin\r\n"),
    ),
    (
        "cli_password",
        "net use Z: \\\\srv\\share /user:CORP\\svc /persistent:no\r\nnet use Y: \\\\srv\\share * /user:CORP\\svc\r\nnet use X: \\\\srv\\share %SHARE_PASSWORD% /user:%SHARE_USER%\r\nnet use Z: /delete\r\n",
        None,
    ),
    (
        "cli_password",
        "smbclient //fs01/scans -U 'SCAN\\scanner%Violet.badger42' -c 'ls'\n",
        Some("smbclient //fs01/scans -U 'SCAN\\scanner%[REDACTED:cli_password]' -c 'ls'\n"),
    ),
    (
        "cli_password",
        "smbclient //fs01/scans -U scanner -c 'ls'\nsmbclient -L fs01 -U guest%\nsmbclient //fs01/x -U \"svc%$SMB_PASSWORD\"\n",
        None,
    ),
    (
        "cli_password",
        "curl -u admin:Fake-Passw0rd! https://ci.example.com",
        Some("curl -u admin:[REDACTED:cli_password] https://ci.example.com"),
    ),
    (
        "cli_password",
        "mysql -h db -u root -pFakeRoot42 app",
        Some("mysql -h db -u root -p[REDACTED:cli_password] app"),
    ),
    (
        "cli_password",
        "sshpass -p 'FakeSsh#1' ssh ops@host",
        Some("sshpass -p '[REDACTED:cli_password]' ssh ops@host"),
    ),
    (
        "cli_password",
        "curl -u \"$USER:$PASS\" https://x\nmysql -u root -p app\ncurl -u elastic:changeme http://localhost:9200\ncurl -u me@example.com:api_token https://x.atlassian.net",
        None,
    ),
    (
        "registry_auth",
        "{\"auths\": {\"ghcr.io\": {\"auth\": \"ZmFrZXVzZXI6RmFrZURvY2tlclB3MQ==\"}}}",
        Some("{\"auths\": {\"ghcr.io\": {\"auth\": \"[REDACTED:registry_auth]\"}}}"),
    ),
    (
        "registry_auth",
        "_auth=ZmFrZXVzZXI6RmFrZU5wbVB3Mg==\n",
        Some("_auth=[REDACTED:registry_auth]\n"),
    ),
    (
        "registry_auth",
        "{\"auth\": \"oauth2\", \"auths\": {\"x\": {\"auth\": \"\"}}}",
        None,
    ),
    (
        "url_credential",
        "git clone https://FAKETb66Pt2McyvYkPI5gYXqJJWV7I3s4rW9NbCD@git.example.com/o/r.git",
        Some("git clone https://[REDACTED:url_credential]@git.example.com/o/r.git"),
    ),
    (
        "url_credential",
        "https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=deadbeef93223a7fba9398a6003f3d5d32a6c9df8c2eb74b0ae19a01f6a6b445",
        Some(
            "https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=[REDACTED:url_credential]",
        ),
    ),
    (
        "url_credential",
        "ssh://git@github.com/o/r.git https://deploy-bot-2024-account@registry.example.com/v2/ https://api.example.com/v1/token/refresh\nSENTRY_DSN=https://0123456789abcdef0123456789abcdef@o123456.ingest.sentry.io/1234567",
        None,
    ),
    (
        "netrc_password",
        "machine api.example.com login fake password FakeNetrc1\n",
        Some("machine api.example.com login fake password [REDACTED:netrc_password]\n"),
    ),
    (
        "netrc_password",
        "machine example.org\n  login fake\n  password \"FakeNetrc#2\"\n",
        Some("machine example.org\n  login fake\n  password \"[REDACTED:netrc_password]\"\n"),
    ),
    (
        "netrc_password",
        "On the build machine, open the login page and reset the password there.\nmachine h login u password $PASSWORD",
        None,
    ),
    (
        "xml_secret",
        "<server><password>FakeMvnPw9</password></server>",
        Some("<server><password>[REDACTED:xml_secret]</password></server>"),
    ),
    (
        "xml_secret",
        "<add key=\"DbPassword\" value=\"FakeDbPw77\" />",
        Some("<add key=\"DbPassword\" value=\"[REDACTED:xml_secret]\" />"),
    ),
    (
        "xml_secret",
        "<name>fs.s3a.secret.key</name>\n<value>FAKE7197DS/OHqJCoV2KwZW4Z9WqxNxFerL7f7au</value>",
        Some("<name>fs.s3a.secret.key</name>\n<value>[REDACTED:xml_secret]</value>"),
    ),
    (
        "xml_secret",
        "<password>${db.password}</password>\n<passwordPolicy>strict</passwordPolicy>\n<tokenTtl>3600</tokenTtl>",
        None,
    ),
    (
        "yaml_block_secret",
        "db:\n  password: |\n    FakeBlockPw-1\n  host: x\n",
        Some("db:\n  password: |\n    [REDACTED:yaml_block_secret]\n  host: x\n"),
    ),
    (
        "yaml_block_secret",
        "- token: >-\n    FAKEvqk8CbumSJxzK3e2yoG3XsjwfIYStAZnuaBX\n",
        Some("- token: >-\n    [REDACTED:yaml_block_secret]\n"),
    ),
    (
        "yaml_block_secret",
        "password: >\n  The password of the admin user.\ntoken: |\n  {{ .Values.token }}\n",
        None,
    ),
    (
        "dockerfile_secret",
        "FROM node:20\nENV NPM_TOKEN FAKEmcZ0ziZNSijq0gS9pyC9YzMXi7ym2PuNL1q6\n",
        Some("FROM node:20\nENV NPM_TOKEN [REDACTED:dockerfile_secret]\n"),
    ),
    (
        "dockerfile_secret",
        "ARG DB_PASSWORD \"FakeArgPw3\"\n",
        Some("ARG DB_PASSWORD \"[REDACTED:dockerfile_secret]\"\n"),
    ),
    (
        "dockerfile_secret",
        "ARG NPM_TOKEN\nENV PASSWORD_FILE /run/secrets/pw\nENV DB_PASSWORD $DB_PASSWORD\n",
        None,
    ),
    (
        "high_entropy_key",
        "KEK=8f3a9c2b7e1d4f6a0b5c8e2d9f1a3b7c\n",
        Some("KEK=[REDACTED:high_entropy_key]\n"),
    ),
    (
        "high_entropy_key",
        "DATA_DEK_B64=\"q8Jf3kLm9Vx2Zt7Wp4Rn6Ys1Hc5Gd0Ba\"\n",
        Some("DATA_DEK_B64=\"[REDACTED:high_entropy_key]\"\n"),
    ),
    (
        "high_entropy_key",
        "codek = \"q8Jf3kLm9Vx2Zt7Wp4Rn6Ys1Hc5Gd0Ba\"\ndek: blauw\nkek_rotation: monthly\n",
        None,
    ),
    (
        "high_entropy_key",
        "production:\n  secret_key_base: deadbeefc65b3fd1eaf47de635663afe593f46807fbddf0a4d2f6d2e4d57a17ab9d9db3b6e07fe5a32fe8bbc9b3f436120444a100a86f4ad33d9f09ce6d2125a\n",
        Some("production:\n  secret_key_base: [REDACTED:high_entropy_key]\n"),
    ),
    (
        "high_entropy_key",
        "APP_KEY=base64:FAKEUo7HqtmDQOlMehhaxonRdN4QkK9OKWkYTDjapT4=\n",
        Some("APP_KEY=[REDACTED:high_entropy_key]\n"),
    ),
    (
        "high_entropy_key",
        "signingKey: \"FAKEMrlua9L3mJoVixnDqvCFtM_O7Ugu-MBKeyTg9wY=\"",
        Some("signingKey: \"[REDACTED:high_entropy_key]\""),
    ),
    (
        "high_entropy_key",
        "monkey = \"FAKEkhTNEm9iyOQShzOKoLzcNVfkxMxD\"\ncache_key = \"deadbeef9f15229ad3dca730e59bb893efc21686\"\npCur->nKey = sqlite3BtreePayloadSize(pCur);\npublic_key = \"FAKET5RJ5zt9qKMfrAGfK9rD8e2vZ4b6mcBASoEKMV1b\"",
        None,
    ),
    (
        "private_key",
        "Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIFAKEzRR4A1aBx+TEHpP5YUymQ2I0oqLpjQPF1PM\nPrivate-Lines: 1\nAAAAIFAKEAYIAkeC07KVLDHAbe/dCq698KSuV9KdUORjiUkh\nPrivate-MAC: deadbeefb17fa8083c9ff7d3f5e41f117f08f51c47e4b59010d58cff1a4ffd3f\n",
        Some(
            "Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIFAKEzRR4A1aBx+TEHpP5YUymQ2I0oqLpjQPF1PM\nPrivate-Lines: 1\n[REDACTED:private_key]\nPrivate-MAC: deadbeefb17fa8083c9ff7d3f5e41f117f08f51c47e4b59010d58cff1a4ffd3f\n",
        ),
    ),
    (
        "private_key",
        "    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCkZBS0VGT0F0TE5pZHBocURZQmtxN2dRTDJEdzI4c0ZTNFJkMGhSQWdmRi90WXpWNTdKUlY1a3VGYlFBbGtlSGEKLS0tLS1FTkQgRUMgUFJJVkFURSBLRVktLS0tLQo=\n",
        Some("    client-key-data: [REDACTED:private_key]\n"),
    ),
    (
        "private_key",
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkZBS0VXeWNLOXFaSHRyYVhpU2lML01FUFh0T2h4cDVEa0lJeFN1a0h2MGVUQk1lYWl6ZjBFcjE5NSttSWdzTEYKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n",
        None,
    ),
    (
        "password_assignment",
        "db_password: str = \"FakeTypedPw1\"",
        Some("db_password: str = \"[REDACTED:password_assignment]\""),
    ),
    (
        "password_assignment",
        "static API_TOKEN: &str = \"FAKEDRqF70AQIM8VW3BiE1Nzh9tdEgRL\";",
        Some("static API_TOKEN: &str = \"[REDACTED:password_assignment]\";"),
    ),
    (
        "password_assignment",
        "SMTP_PASS=FakeSmtp3\n",
        Some("SMTP_PASS=[REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "ssh_passphrase: FakePhrase42\n",
        Some("ssh_passphrase: [REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "const STOP_REASON_MAX_TOKEN: &str = \"maxTokens\";\nconst SERVICE_ACCOUNT_PASSWORD: &str = \"TRUNCATE\";\nforce_pass: true/false\nrender_pass = \"shadowPass2\"\nBYPASS_CACHE=1",
        None,
    ),
    (
        "password_assignment",
        "password: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf\nsecret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf\npassword: vault:secret/data/db#pw\nsecret: \"[REDACTED]\"",
        None,
    ),
    (
        "password_assignment",
        "\"access_token\": \"access-1\", \"progressToken\": \"progress-test-1\"\nSTRIPE_SECRET_KEY=sk_test_FAKEEPBXFhjSfTCnqkaKFgKh\nhtoken : super::super::Foundation:: HANDLE,",
        None,
    ),
    (
        "password_assignment",
        "algolia: {\n  apiKey: \"deadbeef0123456789abcdef01234567\",\n  indexName: \"docs\",\n  appId: \"FAKE0APP0ID\",\n},",
        None,
    ),
    (
        "password_assignment",
        "stripe: {\n  apiKey: \"FakeKey0123456789abcdef\",\n},",
        Some("stripe: {\n  apiKey: \"[REDACTED:password_assignment]\",\n},"),
    ),
    (
        "github_token",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        None,
    ),
    (
        "stripe_key",
        "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        None,
    ),
    (
        "stripe_key",
        "endpoint_secret = \"whsec_FAKE9TFuDcL7n085BU8Wn1Ngyf9KTnjS\"",
        Some("endpoint_secret = \"[REDACTED:stripe_key]\""),
    ),
    (
        "jwt",
        "token = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c'",
        None,
    ),
    // code_credential
    (
        "code_credential",
        "var c = new NetworkCredential(\"user\", \"p@ss\");",
        Some("var c = new NetworkCredential(\"user\", \"[REDACTED:code_credential]\");"),
    ),
    (
        "code_credential",
        "define('DB_PASSWORD', 'FakeWpPw9');",
        Some("define('DB_PASSWORD', '[REDACTED:code_credential]');"),
    ),
    (
        "code_credential",
        "Connection c = DriverManager.getConnection(url, \"app\", \"FakeJdbc7\");",
        Some(
            "Connection c = DriverManager.getConnection(url, \"app\", \"[REDACTED:code_credential]\");",
        ),
    ),
    (
        "code_credential",
        "r = requests.get(url, auth=(\"api\", \"FakeTuple6\"))",
        Some("r = requests.get(url, auth=(\"api\", \"[REDACTED:code_credential]\"))"),
    ),
    (
        "code_credential",
        "auth := smtp.PlainAuth(\"\", \"me@example.com\", \"FakeSmtp8\", host)",
        Some(
            "auth := smtp.PlainAuth(\"\", \"me@example.com\", \"[REDACTED:code_credential]\", host)",
        ),
    ),
    (
        "code_credential",
        "install(Auth) { basicAuth(\"user\", \"FakeKtor3\") }",
        Some("install(Auth) { basicAuth(\"user\", \"[REDACTED:code_credential]\") }"),
    ),
    (
        "code_credential",
        "factory.setPassword(\"FakeSetter8\");",
        Some("factory.setPassword(\"[REDACTED:code_credential]\");"),
    ),
    (
        "code_credential",
        "builder.username(\"sa\").password(\"FakeBuild7\")",
        Some("builder.username(\"sa\").password(\"[REDACTED:code_credential]\")"),
    ),
    (
        "code_credential",
        "vault.getSecret(\"FakeName1\");\nfactory.setPassword(System.getenv(\"PW\"));\nsetToken(\"refresh_token\")",
        None,
    ),
    (
        "code_credential",
        ".basic_auth(&user, Some(pass))
oauth(\"client\", \"FakeNotPw1\")",
        None,
    ),
    (
        "code_credential",
        "new NetworkCredential(user, password);\ndefine('DB_PASSWORD', getenv('DB_PASSWORD'));\nlogin(\"admin\", \"password\")",
        None,
    ),
    // pgpass_password
    (
        "pgpass_password",
        ";; pgbouncer auth_file\n\"app_user\" \"Zx9!wQp4Lm\"\n",
        Some(";; pgbouncer auth_file\n\"app_user\" \"[REDACTED:pgpass_password]\"\n"),
    ),
    (
        "pgpass_password",
        "\"report\" \"Kd7#qWx2Pn\"\n",
        Some("\"report\" \"[REDACTED:pgpass_password]\"\n"),
    ),
    (
        "pgpass_password",
        "\"app\" \"changeme\"\n\"admin\" \"password\"\n\"ro\" \"\"\n\"report\" \"md5d41d8cd98f00b204e9800998ecf8427e\"\n",
        None,
    ),
    (
        "pgpass_password",
        "msgid \"Password\"\nmsgstr \"Passwort\"\n\"user\" \"Xy7!abcDEF\"\n",
        None,
    ),
    (
        "pgpass_password",
        "db.example.com:5432:app:appuser:FakePgPw1\n",
        Some("db.example.com:5432:app:appuser:[REDACTED:pgpass_password]\n"),
    ),
    (
        "pgpass_password",
        "*:*:*:postgres:Fake\\:Pg2",
        Some("*:*:*:postgres:[REDACTED:pgpass_password]"),
    ),
    (
        "pgpass_password",
        "hostname:port:database:username:password\n00:11:22:33:44:55\nroot:x:0:0:root:/root:/bin/bash\n",
        None,
    ),
    // registry_token
    (
        "registry_token",
        r#"{"gitlab-token": {"gitlab.example.com": "FAKEglab9Tok3n2xYzQ"}}"#,
        Some(r#"{"gitlab-token": {"gitlab.example.com": "[REDACTED:registry_token]"}}"#),
    ),
    (
        "registry_token",
        r#""bearer": { "repo.example.org": "FAKEbr8Zt3LmN0pRvW2xY5" }"#,
        Some(r#""bearer": { "repo.example.org": "[REDACTED:registry_token]" }"#),
    ),
    (
        "registry_token",
        r#"{"github-oauth": {"github.com": "<token>"}, "bearer": {"x.org": "${TOKEN}"}}"#,
        None,
    ),
    // heroku_token
    (
        "heroku_token",
        "HEROKU_API_KEY=HRKU-AAfAkEq3Zx9Lm2Vb7Nc4Rt8Ws1Ye6Ud0Ki5OjFAKEq3Zx9Lm2Vb7Nc4Rt8W\n",
        Some("HEROKU_API_KEY=[REDACTED:heroku_token]\n"),
    ),
    (
        "heroku_token",
        "[09:15] <ops> HRKU-AAq3Zx9Lm2Vb7Nc4Rt8Ws1Ye6Ud0Ki5OjFAKE_q3Zx9Lm2Vb7Nc4Rt8-dzU\n",
        Some("[09:15] <ops> [REDACTED:heroku_token]\n"),
    ),
    (
        "heroku_token",
        "Heroku tokens start HRKU- and are long.\n",
        None,
    ),
    // mailgun_api_key
    (
        "mailgun_api_key",
        "MAILGUN_KEY=95f8e3cc0891fd2fd81463f68d8f5af7-482f2207-ebde9236\n",
        Some("MAILGUN_KEY=[REDACTED:mailgun_api_key]\n"),
    ),
    (
        "mailgun_api_key",
        "mg = Mailgun(api_key: 'key-3a06f9b29d4c6fd0e4c373a8b9e0d1f7')\n",
        Some("mg = Mailgun(api_key: '[REDACTED:mailgun_api_key]')\n"),
    ),
    (
        "mailgun_api_key",
        "request_id: 3f2504e0-4f89-11d3-9a0c-0305e82c3301\n",
        None,
    ),
    // prose_credential
    (
        "prose_credential",
        "Zugang zum Router:\nBenutzer: admin\nPasswort: Kx9#mPq2Lw\n",
        Some("Zugang zum Router:\nBenutzer: admin\nPasswort: [REDACTED:prose_credential]\n"),
    ),
    (
        "prose_credential",
        "Identifiant : compta, mot de passe : « Rv4!tNq8Zs »\n",
        Some("Identifiant : compta, mot de passe : « [REDACTED:prose_credential] »\n"),
    ),
    (
        "prose_credential",
        "Usuario: soporte / Contraseña: Bt7!wLx3Qe.\n",
        Some("Usuario: soporte / Contraseña: [REDACTED:prose_credential].\n"),
    ),
    (
        "prose_credential",
        "Логин: deploy, пароль: Hn5%rTz8Kq\n",
        Some("Логин: deploy, пароль: [REDACTED:prose_credential]\n"),
    ),
    (
        "prose_credential",
        "测试账号：qa01，密码：Wz8#kLp3Vm\n",
        Some("测试账号：qa01，密码：[REDACTED:prose_credential]\n"),
    ),
    (
        "prose_credential",
        "管理画面のパスワード: 「Qm4!xTr9Ln」\n",
        Some("管理画面のパスワード: 「[REDACTED:prose_credential]」\n"),
    ),
    (
        "prose_credential",
        "Acceso: la contraseña del usuario de respaldo es Brum4!lago, cámbiala al terminar.\n",
        Some(
            "Acceso: la contraseña del usuario de respaldo es [REDACTED:prose_credential], cámbiala al terminar.\n",
        ),
    ),
    (
        "prose_credential",
        "- 共有NASのパスワードは「Kirin2024!x」です。\n",
        Some("- 共有NASのパスワードは「[REDACTED:prose_credential]」です。\n"),
    ),
    (
        "prose_credential",
        "Zugänge:\n  - Passwort: hafen-1982\n",
        Some("Zugänge:\n  - Passwort: [REDACTED:prose_credential]\n"),
    ),
    (
        "prose_credential",
        "Het wachtwoord is te kort.\nDas Passwort ist falsch oder abgelaufen.\nLe mot de passe est obligatoire.\nパスワードは8文字以上です。\n",
        None,
    ),
    // A locale's labels, a rule about passwords and code name a password; they are not one.
    (
        "prose_credential",
        "de:\n  login:\n    passwort: Passwort\n    hinweis: \"Passwort: mindestens 8 Zeichen\"\n",
        None,
    ),
    (
        "prose_credential",
        "{\"passwort\": \"Passwort vergessen?\", \"senha\": \"Esqueceu a senha?\"}\n",
        None,
    ),
    (
        "prose_credential",
        "val passwort: String = passwortFeld.text.toString()\nпароль: ********\n密码：至少8位\n",
        None,
    ),
    (
        "prose_credential",
        "<table>\n<tr><th>Host</th><td>vpn.corp.example</td></tr>\n<tr><th>Password</th><td>Hq8!mTz3Lp</td></tr>\n</table>\n",
        Some(
            "<table>\n<tr><th>Host</th><td>vpn.corp.example</td></tr>\n<tr><th>Password</th><td>[REDACTED:prose_credential]</td></tr>\n</table>\n",
        ),
    ),
    (
        "prose_credential",
        "<tr><td><b>API key:</b></td>\n    <td><code>k3Jf8sQ2LzR7vW1x</code></td></tr>\n",
        Some(
            "<tr><td><b>API key:</b></td>\n    <td><code>[REDACTED:prose_credential]</code></td></tr>\n",
        ),
    ),
    (
        "prose_credential",
        "<tr><th>Password</th><td>required</td></tr>\n<tr><td>Token</td><td>access_token</td></tr>\n<tr><td>Password</td><td>********</td></tr>\n<tr><td>Secret</td><td>{{ vault_secret }}</td></tr>\n",
        None,
    ),
    (
        "prose_credential",
        "<p>Username: <b>admin</b> Password: <b>Rk5#vNq9Ws</b></p>\n",
        Some("<p>Username: <b>admin</b> Password: <b>[REDACTED:prose_credential]</b></p>\n"),
    ),
    (
        "prose_credential",
        "<p>Password: <b>required</b>, at least <b>12</b> characters.</p>\n",
        None,
    ),
    (
        "prose_credential",
        "The maintenance role's password is `Qv7#rTz2Lp9w` for now.\n",
        Some("The maintenance role's password is `[REDACTED:prose_credential]` for now.\n"),
    ),
    (
        "prose_credential",
        "| Setting | Value |\n|---|---|\n| Password | Wq3!hLs8Zk2d |\n",
        Some("| Setting | Value |\n|---|---|\n| Password | [REDACTED:prose_credential] |\n"),
    ),
    (
        "prose_credential",
        "The login is `ops` / `mK4_tYz8Qw2e`.\n",
        Some("The login is `ops` / `[REDACTED:prose_credential]`.\n"),
    ),
    (
        "prose_credential",
        "The new key is k3Jf8sQ2LzR7vW1xN4bT9mY6.\n",
        Some("The new key is [REDACTED:prose_credential].\n"),
    ),
    (
        "prose_credential",
        "Passwords are hashed with `argon2id`; the `password` field is never logged.\n| Password | see 1Password |\n| Password | 1Password |\n",
        None,
    ),
    // rule set 3 additions to older kinds
    (
        "xml_secret",
        "<property name=\"db.password\" value=\"FakeDbPw1\"/>",
        Some("<property name=\"db.password\" value=\"[REDACTED:xml_secret]\"/>"),
    ),
    (
        "xml_secret",
        "<password>{FAKEjZ3Nn7cQ8rWm+Ue5HXd0tPq2sVb4=}</password>",
        Some("<password>[REDACTED:xml_secret]</password>"),
    ),
    (
        "xml_secret",
        "<property name=\"password.min.length\" value=\"12\"/>\n<password>{password}</password>",
        None,
    ),
    (
        "password_assignment",
        "- name: DB_PASSWORD\n  value: FakeK8sPw3",
        Some("- name: DB_PASSWORD\n  value: [REDACTED:password_assignment]"),
    ),
    (
        "password_assignment",
        "- name: DB_PASSWORD\n  value: \"\"\n- name: DB_HOST\n  value: FakeHost123",
        None,
    ),
    (
        "password_assignment",
        "DB_PASSWORD=\"correct horse battery staple\"",
        Some("DB_PASSWORD=\"[REDACTED:password_assignment]\""),
    ),
    (
        "password_assignment",
        "ERROR_PASSWORD=\"Invalid password, try again.\"\nDB_PASSWORD=\"change me\"",
        None,
    ),
    (
        "password_assignment",
        "web1 ansible_host=10.0.0.5 ansible_ssh_pass=FakeSsh9",
        Some("web1 ansible_host=10.0.0.5 ansible_ssh_pass=[REDACTED:password_assignment]"),
    ),
    (
        "password_assignment",
        "let first_pass = run(1);\nrender_pass=FakeNotPw9",
        None,
    ),
    (
        "high_entropy_key",
        "define('AUTH_KEY', 'FAKE|Xq>7c:+}2u#L!mWz9_d@R0p(yT^e]kV$3Ns&bH-6o J%4fGi8lQ*aZ1w');",
        Some("define('AUTH_KEY', '[REDACTED:high_entropy_key]');"),
    ),
    (
        "high_entropy_key",
        "define('AUTH_KEY', 'put your unique phrase here');",
        None,
    ),
    (
        "high_entropy_key",
        "$settings['hash_salt'] = 'FAKEq3Zx9Lm2Vb7Nc4Rt8Ws1Ye6Ud0Ki5Oj';",
        Some("$settings['hash_salt'] = '[REDACTED:high_entropy_key]';"),
    ),
    (
        "webhook_url",
        "https://x.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/deadbeef0123456789abcdef01234567/e-f",
        Some(
            "https://x.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/[REDACTED:webhook_url]/e-f",
        ),
    ),
    (
        "connection_string_password",
        "\"Data Source=db;User ID=app;Password=!Qz9~vT^2mL;Encrypt=True\"",
        Some(
            "\"Data Source=db;User ID=app;Password=[REDACTED:connection_string_password];Encrypt=True\"",
        ),
    ),
    (
        "connection_string_password",
        "db, err := sql.Open(\"mysql\", \"app:Zq9-vT2mLw@tcp(db:3306)/shop\")",
        Some(
            "db, err := sql.Open(\"mysql\", \"app:[REDACTED:connection_string_password]@tcp(db:3306)/shop\")",
        ),
    ),
    (
        "connection_string_password",
        "dsn := user + \":\" + pass + \"@tcp(\" + host + \")/shop\"",
        None,
    ),
    (
        "url_credential",
        "url: https://api.status.example/v1/hooks/vPrFgEQZXTcu8lv2Mf8ONPPt",
        Some("url: https://api.status.example/v1/hooks/[REDACTED:url_credential]"),
    ),
    (
        "url_credential",
        "see https://git.example.com/org/repo/settings/hooks/post-receive-handler",
        None,
    ),
    (
        "code_credential",
        "DriverManager.getConnection(\n    \"jdbc:mysql://db/app\", \"app\", \"Onyx~Zephyr1098\");",
        Some(
            "DriverManager.getConnection(\n    \"jdbc:mysql://db/app\", \"app\", \"[REDACTED:code_credential]\");",
        ),
    ),
    (
        "password_assignment",
        "SMTP_PASSWORD='my p1n3 thistle yonder 46!'\n",
        Some("SMTP_PASSWORD='[REDACTED:password_assignment]'\n"),
    ),
    (
        "password_assignment",
        "ERROR_PASSWORD=\"Wrong password, try again in 5 minutes!\"\n",
        None,
    ),
    (
        "password_assignment",
        "variable \"db_master_password\" {\n  type    = string\n  default = \"m0KZb8tH*p-M0fW\"\n}\n",
        Some(
            "variable \"db_master_password\" {\n  type    = string\n  default = \"[REDACTED:password_assignment]\"\n}\n",
        ),
    ),
    (
        "password_assignment",
        "variable \"api_token\" {\n  default = \"Xk29fLq81ZpW03vN\"\n  sensitive = true\n}\n",
        Some(
            "variable \"api_token\" {\n  default = \"[REDACTED:password_assignment]\"\n  sensitive = true\n}\n",
        ),
    ),
    (
        "password_assignment",
        "variable \"db_password\" {\n  type = string\n  default = \"\"\n}\nvariable \"region\" {\n  default = \"eu-west-1\"\n}\n",
        None,
    ),
    (
        "password_assignment",
        "    vars:\n      ansible_password: zWemT.opYkeWXQbKmJ1E\n",
        Some("    vars:\n      ansible_password: [REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "    key_passphrase: \"Prairie copper willow amber harbor 29.\"\n",
        Some("    key_passphrase: \"[REDACTED:password_assignment]\"\n"),
    ),
    (
        "password_assignment",
        "  password: self.settings.smtpPassword\n",
        None,
    ),
    (
        "password_assignment",
        "replication: \"{{ lookup('hashi_vault', 'secret=secret/data/db:replication') }}\"\n",
        None,
    ),
    (
        "password_assignment",
        "let s = \" user=foo password = hunter2 \";",
        Some("let s = \" user=foo password = [REDACTED:password_assignment] \";"),
    ),
    (
        "code_credential",
        "$pass = ConvertTo-SecureString \"CqrNxKQPXrv.vE4IJBHU\" -AsPlainText -Force",
        Some("$pass = ConvertTo-SecureString \"[REDACTED:code_credential]\" -AsPlainText -Force"),
    ),
    (
        "code_credential",
        "let creds = Credentials::new(\n    \"postmaster@mg.acme.io\".to_owned(),\n    \"b6345cf2d66b50d4ae1e\".to_owned(),\n);",
        Some(
            "let creds = Credentials::new(\n    \"postmaster@mg.acme.io\".to_owned(),\n    \"[REDACTED:code_credential]\".to_owned(),\n);",
        ),
    ),
    (
        "code_credential",
        "    .credentials(\n        \"svc-backup\",\n        \"Ltv1DhQ04mgsbrzAz76y\"\n    )",
        Some(
            "    .credentials(\n        \"svc-backup\",\n        \"[REDACTED:code_credential]\"\n    )",
        ),
    ),
    (
        "code_credential",
        "        .password(\n            \"3~YsiOh7T9kj4Dzzun\")",
        Some("        .password(\n            \"[REDACTED:code_credential]\")"),
    ),
    (
        "code_credential",
        "$pass = ConvertTo-SecureString $env:BACKUP_PASS -AsPlainText -Force",
        None,
    ),
    (
        "password_assignment",
        "spring.mail.username=alerts@example.com\nspring.mail.password=kzyn xjkz xdxb akyd\n",
        Some(
            "spring.mail.username=alerts@example.com\nspring.mail.password=[REDACTED:password_assignment]\n",
        ),
    ),
    (
        "password_assignment",
        "BACKUP_PASSPHRASE=orbit 4 lantern cedar\n",
        Some("BACKUP_PASSPHRASE=[REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "login.password=Mot de passe\nlogin.password.hint=Au moins huit caracteres\n",
        None,
    ),
    (
        "password_assignment",
        "export interface Config {\n  secretToken: Record<string, string> | undefined\n}\n",
        None,
    ),
    (
        "high_entropy_key",
        "define( 'AUTH_KEY', 'Cgk`}#!*g_d_r4B,*{{%pEa)$;l:kj+v:WqYI+8wcw*mji8$:qFB:!VKGH[7_tRB' );",
        Some("define( 'AUTH_KEY', '[REDACTED:high_entropy_key]' );"),
    ),
    (
        "code_credential",
        "const token = jwt.sign({ id: user.id }, \"3SQPHFj4hn0RwulweaCEWQ_94kEUMFB2\", { expiresIn: \"7d\" });",
        Some(
            "const token = jwt.sign({ id: user.id }, \"[REDACTED:code_credential]\", { expiresIn: \"7d\" });",
        ),
    ),
    (
        "code_credential",
        "token = jwt.encode(payload, 'Zq8wL2vR9pT4kX1m', algorithm='HS256')",
        Some("token = jwt.encode(payload, '[REDACTED:code_credential]', algorithm='HS256')"),
    ),
    (
        "code_credential",
        "const token = jwt.sign({ id: user.id }, process.env.JWT_SECRET);",
        None,
    ),
    (
        "url_credential",
        "const URL = \"https://api.weather.example/data/2.5?units=metric&appid=9ce402719a32567ecf7aaff0060f26d5&q=\";",
        Some(
            "const URL = \"https://api.weather.example/data/2.5?units=metric&appid=[REDACTED:url_credential]&q=\";",
        ),
    ),
    (
        "cli_password",
        "gpg --batch --passphrase \"wombat mosaic vortex saturn thunder\" --detach-sign app.tar.gz",
        Some("gpg --batch --passphrase \"[REDACTED:cli_password]\" --detach-sign app.tar.gz"),
    ),
    (
        "cli_password",
        "gpg --batch --passphrase \"$GPG_PASSPHRASE\" --detach-sign app.tar.gz",
        None,
    ),
    (
        "code_credential",
        "CREATE USER 'bi_reader'@'%' IDENTIFIED BY 'Raven.5423rhubarb';",
        Some("CREATE USER 'bi_reader'@'%' IDENTIFIED BY '[REDACTED:code_credential]';"),
    ),
    (
        "code_credential",
        "CREATE ROLE app WITH LOGIN PASSWORD 'Qz8-lantern-41';",
        Some("CREATE ROLE app WITH LOGIN PASSWORD '[REDACTED:code_credential]';"),
    ),
    (
        "code_credential",
        "#define MQTT_PASSWORD \"f%=okcc4F0**bTc_\"",
        Some("#define MQTT_PASSWORD \"[REDACTED:code_credential]\""),
    ),
    (
        "code_credential",
        "return new \\PDO($dsn, 'shop', 'Ember.3774ember', []);",
        Some("return new \\PDO($dsn, 'shop', '[REDACTED:code_credential]', []);"),
    ),
    (
        "code_credential",
        "#define PASSWORD_MAX_LEN \"64\"\nCREATE USER app IDENTIFIED BY '';",
        None,
    ),
    (
        "password_assignment",
        "ldap_default_authtok = j^=w~x+.G3az%75t0y5M\n",
        Some("ldap_default_authtok = [REDACTED:password_assignment]\n"),
    ),
    (
        "password_assignment",
        "de:\n  password: \"Passwort\"\nru:\n  password: \"Пароль\"\n",
        None,
    ),
    (
        "password_assignment",
        "  encryptedData:\n    password: AgMxAlWTyNmkddQuADhzgaZs4fYwnuLT9ts5qXPbKNKYIwUDeT/i59fnZAvKc9PuhBTLVPdsJpl7kkB6fea2v9xoCTESnPxzwwc4kGi27sKNIfJvM2MwXVDSRvRXCjMCr0XVgE2QHm0neZ/JwCMxfr7mHZ22kZY6YbTEVe2VSNOUPGIhMnEArPadmL1D4hSUF+zkovWN5fejyPbbYH1cDQ5BkFGxk3YnHSS3VaX610d4rqn6ltAzaVApBGV8QJScDeoa+tuGQqpjHGZx74hd9Y7cFjLM3Jm1z3NcEDV7tRdZDvlc==\n",
        None,
    ),
    (
        "url_credential",
        "url: https://ingest.example.io/hooks/v1/CrJCWKu-R5eWzvzDtOzA2fiLv9dMw-XW",
        Some("url: https://ingest.example.io/hooks/v1/[REDACTED:url_credential]"),
    ),
    (
        "password_assignment",
        "requirepass 1fe1beaf5889e30a756cf4be35\nmaxmemory 512mb\n",
        Some("requirepass [REDACTED:password_assignment]\nmaxmemory 512mb\n"),
    ),
    (
        "password_assignment",
        "masterauth \"Qx7-harbor-lantern\"\n",
        Some("masterauth \"[REDACTED:password_assignment]\"\n"),
    ),
    (
        "password_assignment",
        "# requirepass foobared\nrequirepass \"\"\n",
        None,
    ),
    (
        "password_assignment",
        "network={\n    ssid=\"Home\"\n    psk=\"marble bramble 283 gravel ember\"\n}\n",
        Some("network={\n    ssid=\"Home\"\n    psk=\"[REDACTED:password_assignment]\"\n}\n"),
    ),
    (
        "password_assignment",
        "EMAIL_HOST_PASSWORD = \"egtm exqw ormn wvoy\"\n",
        Some("EMAIL_HOST_PASSWORD = \"[REDACTED:password_assignment]\"\n"),
    ),
    (
        "password_assignment",
        "SECRET_QUESTION = \"What was your first pet\"\nde:\n  secret: \"Geheimnis\"\n",
        None,
    ),
    (
        "code_credential",
        "'password' => env('DB_PASSWORD', 'Harbor#Lantern5837*'),",
        Some("'password' => env('DB_PASSWORD', '[REDACTED:code_credential]'),"),
    ),
    (
        "code_credential",
        "DB_PASS = os.getenv(\"DB_PASSWORD\", \"Qz8-lantern-41\")",
        Some("DB_PASS = os.getenv(\"DB_PASSWORD\", \"[REDACTED:code_credential]\")"),
    ),
    (
        "code_credential",
        "'password' => env('DB_PASSWORD', ''),\n'host' => env('DB_HOST', '127.0.0.1'),",
        None,
    ),
    (
        "connection_string_password",
        "BUNDLE_GEMS__CONTRIBSYS__COM: \"4d19f355:4b2d4c26\"\n",
        Some("BUNDLE_GEMS__CONTRIBSYS__COM: \"4d19f355:[REDACTED:connection_string_password]\"\n"),
    ),
    (
        "connection_string_password",
        "export BUNDLE_ENTERPRISE__EXAMPLE__COM=deploy:Qz8lantern41\n",
        Some(
            "export BUNDLE_ENTERPRISE__EXAMPLE__COM=deploy:[REDACTED:connection_string_password]\n",
        ),
    ),
    (
        "connection_string_password",
        "BUNDLE_GEMS__CONTRIBSYS__COM: \"${SIDEKIQ_USER}:${SIDEKIQ_PASS}\"\n",
        None,
    ),
    (
        "high_entropy_key",
        "_FERNET = Fernet(b\"0V7JH5WF42mUidJqat2IPU_Is9JCReYS9e8gY7rDZgk=\")",
        Some("_FERNET = Fernet(b\"[REDACTED:high_entropy_key]\")"),
    ),
    (
        "high_entropy_key",
        "var signingKey = []byte(\"Zq8wL2vR9pT4kX1mN7bQ3sY6\")",
        Some("var signingKey = []byte(\"[REDACTED:high_entropy_key]\")"),
    ),
    (
        "high_entropy_key",
        "f = Fernet(key)\nkey = Fernet.generate_key()",
        None,
    ),
    (
        "connection_string_password",
        "\"Server=db;User ID=app;Password=myPassword;\"\n\"Server=db;Uid=app;Pwd=mypassword;\"",
        None,
    ),
    (
        "code_credential",
        "#define TEST_PASS \"PASSED\"\n#define RENDER_PASS \"shadowmap\"\n#define AUTH_TOKEN \"Authorization\"",
        None,
    ),
    (
        "code_credential",
        "#ifndef STASSID\n#define STASSID \"home\"\n#define STAPSK \"lantern41harbor\"\n#endif",
        Some(
            "#ifndef STASSID\n#define STASSID \"home\"\n#define STAPSK \"[REDACTED:code_credential]\"\n#endif",
        ),
    ),
    (
        "code_credential",
        "os.Setenv(\"GITHUB_TOKEN\", \"fake-token-1\")\nmonkeypatch.setenv(\"API_TOKEN\", \"Zq8wL2vR9pT4kX1m\")",
        None,
    ),
    (
        "password_assignment",
        "token = resp.OAuth2Token\ncert := cfg.X509CertPem\n",
        None,
    ),
    (
        "password_assignment",
        "MYSQL_PWD=Zq8lantern41 $MYSQL -uroot\n",
        Some("MYSQL_PWD=[REDACTED:password_assignment] $MYSQL -uroot\n"),
    ),
    (
        "password_assignment",
        "form.password=Passwort (mindestens 8 Zeichen)\nmasterauth should match requirepass on replicas\n",
        None,
    ),
    (
        "connection_string_password",
        "BUNDLE_BUILD__NOKOGIRI: \"--use-system-libraries=C:\\dir\"\n",
        None,
    ),
    (
        "url_credential",
        "https://open.weixin.qq.com/connect/qrconnect?appid=wx520c15f417810387&redirect_uri=x",
        None,
    ),
    (
        "url_credential",
        "https://files.example.com/get?f=a.pdf&sig=deadbeef9f8e7d6c5b4a",
        Some("https://files.example.com/get?f=a.pdf&sig=[REDACTED:url_credential]"),
    ),
];

/// A secret access key given right after its key id is masked, though nothing names it.
#[test]
fn an_aws_secret_after_its_key_id() {
    let masker = Masker::new();
    check(
        &masker,
        "new BasicAWSCredentials(\n    \"AKIAQFCLPXLS535CWQXJ\",\n    \"PwSduyPJ5nX1omL6r5jkE4kiJTGKOkQoDTRqXJ1A\");",
        Some(
            "new BasicAWSCredentials(\n    \"[REDACTED:aws_access_key_id]\",\n    \"[REDACTED:aws_secret_access_key]\");",
        ),
    );
    // Forty characters after something else are not a secret key.
    check(
        &masker,
        "hash(\"build\", \"PwSduyPJ5nX1omL6r5jkE4kiJTGKOkQoDTRqXJ1A\")",
        None,
    );
}

#[test]
fn rule_table() {
    let masker = Masker::new();
    for &(kind, input, expected) in CASES {
        check(&masker, input, expected);
        if expected.is_some() {
            let (_, counts) = masker.mask(input);
            assert_eq!(counts.len(), 1, "{input:?} counted {counts:?}");
            assert_eq!(counts.get(kind), Some(&1), "{input:?} counted {counts:?}");
        }
    }
}

#[test]
fn every_rule_compiles() {
    // Rules compile on first use; each must compile, whether or not a test text reaches it.
    for rule in Masker::new().rules() {
        assert!(!rule.regex().as_str().is_empty(), "{}", rule.kind);
    }
}

#[test]
fn every_rule_has_two_positives_and_a_near_miss() {
    for rule in Masker::new().rules() {
        let cases = CASES.iter().filter(|(kind, _, _)| *kind == rule.kind);
        let positives = cases.clone().filter(|(_, _, e)| e.is_some()).count();
        let negatives = cases.filter(|(_, _, e)| e.is_none()).count();
        assert!(
            positives >= 2,
            "{} has {positives} positive cases",
            rule.kind
        );
        assert!(negatives >= 1, "{} has no near-miss case", rule.kind);
    }
}

#[test]
fn every_kind_is_documented_and_snake_case() {
    let source = include_str!("mod.rs");
    for rule in Masker::new().rules() {
        assert!(
            source.contains(&format!("//! | `{}` |", rule.kind)),
            "{} missing from the table",
            rule.kind
        );
        assert!(
            rule.kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_')
        );
        assert!(!rule.description.is_empty());
        assert!(marker(rule.kind).len() < MARKER_BYTES, "{}", rule.kind);
    }
}

/// A marker's kind is not a name: a value after `[REDACTED:anthropic_api_key]=` is not taken
/// for an `api_key`'s, on the first pass (whose prefilter saw the key, not the marker) or on
/// the second.
#[test]
fn a_markers_kind_is_never_read_as_a_name() {
    let masker = Masker::new();
    let (once, _) =
        masker.mask("sk-ant-api03-FAKEfake0123456789FAKEfake0123456789-abcdAA=postgresAIza==");
    assert_eq!(once, "[REDACTED:anthropic_api_key]=postgresAIza==");
    assert_eq!(masker.mask(&once).0, once);
    assert!(inside_marker("a [REDACTED:api_key]=b", 12));
    assert!(inside_marker("a [REDACTED:api_key]=b", 19));
    assert!(!inside_marker("a [REDACTED:api_key]=b", 20));
    assert!(!inside_marker("a [REDACTED:api_key]=b", 2));
    assert!(!inside_marker("api_key=b", 0));
}

#[test]
fn more_specific_rule_wins_and_counts_once() {
    let masker = Masker::new();
    let (masked, counts) = masker.mask("token = \"ghp_FAKEfake0123456789FAKEfake0123456789\"");
    assert_eq!(masked, "token = \"[REDACTED:github_token]\"");
    assert_eq!(counts, BTreeMap::from([("github_token".to_owned(), 1)]));
    let (masked, counts) =
        masker.mask("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    assert_eq!(
        masked,
        "aws_secret_access_key: [REDACTED:aws_secret_access_key]"
    );
    assert_eq!(counts.len(), 1);
}

#[test]
fn counts_several_secrets_by_kind() {
    let input = "\
GITHUB_TOKEN=ghp_FAKEfake0123456789FAKEfake0123456789
BACKUP_TOKEN=ghp_0123456789FAKEfake0123456789FAKEfake
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
DB_PASSWORD=s3cr3t!pass
DATABASE_URL=postgres://app:s3cr3tPass@db:5432/app
";
    let (masked, counts) = Masker::new().mask(input);
    assert_eq!(
        masked,
        "\
GITHUB_TOKEN=[REDACTED:github_token]
BACKUP_TOKEN=[REDACTED:github_token]
AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]
DB_PASSWORD=[REDACTED:password_assignment]
DATABASE_URL=postgres://app:[REDACTED:connection_string_password]@db:5432/app
"
    );
    let expected: BTreeMap<String, u64> = [
        ("aws_access_key_id", 1),
        ("connection_string_password", 1),
        ("github_token", 2),
        ("password_assignment", 1),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_owned(), n))
    .collect();
    assert_eq!(counts, expected);
}

#[test]
fn ordinary_text_is_borrowed() {
    let masker = Masker::default();
    for input in [
        "",
        "fn main() {\n    println!(\"hello\");\n}\n",
        "See https://example.com/docs for the token format.",
        "let tokens = lexer.tokenize(&source)?;",
        "日本語のテキスト – no secrets here ✓",
    ] {
        check(&masker, input, None);
    }
}

/// Deterministic noise: random mixtures of secret fragments, punctuation and multi-byte
/// characters.
fn noise_texts(count: usize) -> Vec<String> {
    const PIECES: &[&str] = &[
        "password",
        "token",
        "secret",
        "api_key",
        "=",
        ":",
        " ",
        "\"",
        "'",
        "\n",
        "\\n",
        "$",
        "{",
        "}",
        "(",
        ")",
        ".",
        ",",
        ";",
        "&",
        "@",
        "://",
        "postgres",
        "user",
        "hunter2",
        "AKIA",
        "IOSFODNN7EXAMPLE",
        "ghp_",
        "FAKEfake0123456789",
        "sk-",
        "sk-ant-",
        "eyJ",
        "abcdefgh",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEAfake0123",
        "é",
        "日本",
        "🦀",
        "[REDACTED:",
        "]",
        "xoxb-",
        "glpat-",
        "AIza",
        "sk_live_",
        "==",
        "::",
        "DB_PASSWORD",
        "\r\n",
        "/",
        "+",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..count)
        .map(|_| {
            let len = next() % 24;
            (0..len).map(|_| PIECES[next() % PIECES.len()]).collect()
        })
        .collect()
}

#[test]
fn never_panics_and_is_idempotent_on_noise() {
    let masker = Masker::new();
    let mut masked_some = 0;
    for text in noise_texts(5000) {
        let (once, counts) = masker.mask(&text);
        masked_some += usize::from(!counts.is_empty());
        let (twice, counts) = masker.mask(&once);
        assert_eq!(twice, once, "not idempotent on {text:?}");
        assert!(
            counts.is_empty(),
            "second pass counted {counts:?} on {text:?}"
        );
    }
    assert!(
        masked_some > 100,
        "the noise exercised masking only {masked_some} times"
    );
}

/// Skipping a rule whose prefilter literal is absent must never change the result: wherever a
/// rule's expression finds a secret, its prefilter pattern occurs too.
#[test]
fn prefilter_is_a_necessary_condition() {
    let masker = Masker::new();
    let noise = noise_texts(2000);
    let inputs = CASES
        .iter()
        .map(|&(_, input, _)| input)
        .chain(noise.iter().map(String::as_str));
    for input in inputs {
        let set = masker.prefilter.matches(input);
        for (index, rule) in masker.rules().iter().enumerate() {
            if rule.apply(input).is_some() {
                assert!(
                    set.contains(regex_automata::PatternID::must(index)),
                    "{} matched {input:?} without its prefilter",
                    rule.kind
                );
            }
        }
    }
}

#[test]
fn a_long_table_looks_for_its_header_a_bounded_way_back() {
    // Each row of a table under a secret-named column looks back for the header, no more than
    // 4 KiB: a table of 50,000 rows is masked near its header and left beyond, in bounded work.
    let mut text = String::from("| env | user | DB password |\n|---|---|---|\n");
    text.push_str("| staging | app | Wq3!hLs8Zk2d |\n");
    for i in 0..50_000 {
        text.push_str(&format!("| env{i} | app | Pq7!mRt2Xv{i} |\n"));
    }
    let (masked, counts) = Masker::new().mask(&text);
    assert!(masked.contains("| staging | app | [REDACTED:prose_credential] |"));
    assert!(masked.contains("| env49999 | app | Pq7!mRt2Xv49999 |"));
    let near = counts.get("prose_credential").copied().unwrap_or(0);
    assert!(near > 10 && near < 200, "{near} rows masked");
}

#[test]
fn a_long_line_of_backquoted_pairs_reads_its_login_word_a_bounded_way_back() {
    // Each `user` / `…` pair looks back along its line for a login word, no more than 4 KiB:
    // a line of 20,000 pairs is masked near its word and left beyond, in bounded work.
    let mut text = String::from("The shared login is");
    for i in 0..20_000 {
        text.push_str(&format!(" `u{i}` / `Qv7#rTz2Lp{i}`;"));
    }
    let (masked, counts) = Masker::new().mask(&text);
    assert!(masked.contains("`u0` / `[REDACTED:prose_credential]`"));
    assert!(masked.contains("`u19999` / `Qv7#rTz2Lp19999`"));
    let near = counts.get("prose_credential").copied().unwrap_or(0);
    assert!(near > 10 && near < 400, "{near} pairs masked");
}

#[test]
fn a_csv_header_is_read_only_from_the_first_4_kib() {
    // Each row reads the text's first line as its header: a header past 4 KiB is none, so a
    // file of a long first line and many rows costs a bounded amount per row.
    let rows: String = (0..20_000)
        .map(|i| format!("svc{i},admin,Kp4!vRt9zQ{i}\n"))
        .collect();
    let text = format!("service,login,password\n{rows}");
    let (masked, counts) = Masker::new().mask(&text);
    assert!(masked.contains("svc19999,admin,[REDACTED:prose_credential]\n"));
    assert_eq!(counts.get("prose_credential").copied(), Some(20_000));
    let long = format!("service,login,password,{}\n", "x".repeat(5000));
    let text = format!("{long}{rows}");
    let (masked, counts) = Masker::new().mask(&text);
    assert!(masked.contains("svc0,admin,Kp4!vRt9zQ0\n"));
    assert_eq!(counts.get("prose_credential"), None);
}

#[test]
fn a_value_is_read_past_its_expression_only_within_a_bound() {
    // A key of random printable characters is judged by its whole run, a config line's value
    // runs past `&`: both look no more than `RUN_LIMIT` bytes on, so many matches on one long
    // line (a minified file) each cost a bounded amount.
    let key = "e2161uye+#^x3v+mc+qf9kp0@t#tqiu0t-q==(6+ekdpapz8=b";
    let line = format!("FIELD_ENCRYPTION_KEY={key}\n");
    let (masked, _) = Masker::new().mask(&line);
    assert_eq!(masked, "FIELD_ENCRYPTION_KEY=[REDACTED:high_entropy_key]\n");
    // Random printable characters past the bound: read whole they would be a key.
    let mut state = 7u32;
    let endless: String = (0..2 * RUN_LIMIT)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            char::from(
                b"abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*-_=+"[(state >> 16) as usize % 48],
            )
        })
        .collect();
    let long_line = format!("FIELD_ENCRYPTION_KEY=e{endless}\n");
    let (masked, _) = Masker::new().mask(&long_line);
    assert_eq!(masked, long_line, "a run longer than the bound is no key");
    let short_line = format!("FIELD_ENCRYPTION_KEY=e{}\n", &endless[..200]);
    let (masked, _) = Masker::new().mask(&short_line);
    assert!(masked.contains("[REDACTED:high_entropy_key]"), "{masked}");
    let (masked, _) = Masker::new().mask("password = Kite4471&lagoon\n");
    assert_eq!(masked, "password = [REDACTED:password_assignment]\n");
    // Spaces before the name count as the line's start only within the bound.
    let far = format!("{}password = Kite4471&lagoon\n", " ".repeat(RUN_LIMIT + 1));
    let (masked, _) = Masker::new().mask(&far);
    assert!(masked.ends_with("password = [REDACTED:password_assignment]&lagoon\n"));
    assert_eq!(run_end("ab cd", 0, |b| b == b' '), Some(2));
    assert_eq!(run_end("abcd", 1, |b| b == b' '), Some(4));
    assert_eq!(run_end(&"a".repeat(RUN_LIMIT + 1), 0, |b| b == b' '), None);
    assert!(starts_its_line("x\n  key", 4));
    assert!(!starts_its_line("x key", 2));
}

/// Every value of a Kubernetes Secret's `data` is masked whatever its key, within the window
/// around it; a ConfigMap's and a SealedSecret's stay, and a manifest of many entries costs a
/// bounded look per entry (the entries far below `data:` are left rather than looked for).
#[test]
fn a_kubernetes_secrets_data_is_masked_within_its_window() {
    let masker = Masker::new();
    let secret =
        "apiVersion: v1\nkind: Secret\ndata:\n  signing_material: cFo3LVF2NG1YMnRSOHdLeg==\n";
    check(
        &masker,
        secret,
        Some(
            "apiVersion: v1\nkind: Secret\ndata:\n  signing_material: [REDACTED:password_assignment]\n",
        ),
    );
    check(
        &masker,
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  ISSUER_B64: aHR0cHM6Ly9pZC5leGFtcGxl\n---\nkind: Secret\n",
        None,
    );
    let many: String = (0..2000)
        .map(|i| format!("  key{i:04}: cFo3LVF2NG1YMnRSOHdLeg==\n"))
        .collect();
    let text = format!("kind: Secret\ndata:\n{many}");
    let (masked, counts) = masker.mask(&text);
    assert!(masked.contains("key0000: [REDACTED:password_assignment]"));
    assert!(masked.contains("key1999: cFo3LVF2NG1YMnRSOHdLeg=="));
    let found = counts.get("password_assignment").copied().unwrap_or(0);
    assert!((50..2000).contains(&found), "{found}");
}
