//! Secret masking: finds credentials in text and replaces each one with `[REDACTED:<kind>]`.
//!
//! Hit text is masked before selection (and stored text is masked at index time), so a pack
//! never carries a secret and `redactionSummary` can say what was hidden, by kind. Masking is
//! pure: a [`Masker`] is a compiled, immutable rule set and [`Masker::mask`] a function from text
//! to masked text plus counts. Only the secret itself is replaced; everything around it is kept,
//! so `password = "hunter2"` becomes `password = "[REDACTED:password_assignment]"` and a
//! connection string keeps its scheme, user and host.
//!
//! # Rules
//!
//! The rules run in the order of this table, each over the output of the ones before it. A more
//! specific rule therefore wins (a GitHub token in `token = "ghp_…"` counts once, as
//! `github_token`), and because no rule accepts a value containing a `[REDACTED:…]` marker,
//! masking masked text changes nothing. Changing any rule bumps [`MASK_RULES_VERSION`].
//! `crates/ctxpack-core/tests/secrets/corpus.jsonl` holds a positive for every kind and the
//! near misses below; `docs/security.md` scores it against other scanners.
//!
//! | kind | what it catches | what is replaced |
//! |---|---|---|
//! | `private_key` | PEM and OpenSSH private keys: `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP `… PRIVATE KEY BLOCK`), also with `\n` escapes inside a string literal, and a block cut short by a chunk boundary; PuTTY `.ppk` private lines; a whole PEM private key in base64 (`LS0tLS1CRUdJTi…`, a kubeconfig's `client-key-data`); an OpenVPN static key (`-----BEGIN OpenVPN Static key V1-----`); a JSON Web Key's private members (`"d"`; `p`, `q`, `dp`, `dq`, `qi`; a symmetric key's `k`) in an object with a `"kty"`; an Ethereum account's key (64 hex digits) given to `Account.from_key`, `privateKeyToAccount`, `new ethers.Wallet` or `Wallet.fromPrivateKey` | the whole block, BEGIN to END line inclusive; the private lines; the base64; the static key's hex lines; the member's value |
//! | `password_hash` | crypt(3) hashes as in `/etc/shadow` and htpasswd (`$1$`, `$apr1$`, `$2a$`/`$2b$`/`$2y$` bcrypt, `$5$`, `$6$`, `$y$` yescrypt, `$argon2id$…`), LDAP/htpasswd `{SHA}`/`{SSHA}`/`{MD5}` and Django `pbkdf2_sha256$…` | the hash |
//! | `anthropic_api_key` | `sk-ant-…` keys (`sk-ant-api03-…`, `sk-ant-admin01-…`) | the key |
//! | `openai_api_key` | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` keys of 32 or more characters mixing upper case, lower case and digits | the key |
//! | `aws_access_key_id` | `AKIA` (long-term) and `ASIA` (temporary) access key ids: the prefix and 16 base-32 characters | the key id |
//! | `aws_secret_access_key` | a 40-character secret assigned to a name like `aws_secret_access_key`, `aws_secret_key` or `SecretAccessKey`, or given right after an access key id (`new BasicAWSCredentials("AKIA…", "…")`) | the value |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` followed by 36 or more characters, and fine-grained `github_pat_…` tokens | the token |
//! | `gitlab_token` | `glpat-` (personal), `gldt-`, `glrt-`, `glptt-`, `glft-`, `glsoat-`, `gloas-` tokens of 20 or more characters | the token |
//! | `slack_token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xoxo-` tokens and `xapp-` app tokens (they always contain digits) | the token |
//! | `stripe_key` | live secret and restricted keys: `sk_live_…`, `rk_live_…` (and `_prod_`); webhook signing secrets `whsec_…` | the key |
//! | `google_api_key` | `AIza` followed by 35 characters | the key |
//! | `google_oauth_token` | OAuth client secrets `GOCSPX-…` and access tokens `ya29.…` | the token |
//! | `sendgrid_api_key` | `SG.` + 22 + `.` + 43 characters | the key |
//! | `twilio_api_key` | `SK` + 32 hex digits (an API key SID, used with its secret) | the key |
//! | `twilio_auth_token` | 32 hex digits given right after an account SID (`AC` + 32 hex digits, or `Client(ACCOUNT_SID, "…")`), as the next argument, after `:` or as a named argument (`Client("AC…", "…")`, `auth_token="…"`) | the token; the SID is kept |
//! | `discord_bot_token` | the bot's id in base64 (`M`, `N` or `O` and 23–27 characters), a 6-character timestamp and a 27–38-character HMAC, dot-separated, as the string given to a client's `run(…)` or `login(…)` (under a token name it is `password_assignment`) | the token |
//! | `npm_token` | `npm_` + 36 characters | the token |
//! | `pypi_token` | `pypi-AgE…` API tokens (PyPI and TestPyPI) | the token |
//! | `dockerhub_token` | `dckr_pat_…`, `dckr_oat_…` | the token |
//! | `huggingface_token` | `hf_` + 34 characters mixing upper and lower case | the token |
//! | `groq_api_key` | `gsk_` + 52 characters | the key |
//! | `replicate_token` | `r8_` + 37 characters | the token |
//! | `perplexity_api_key` | `pplx-` + 48 characters | the key |
//! | `xai_api_key` | `xai-` + 80 characters | the key |
//! | `langsmith_api_key` | `lsv2_pt_…`, `lsv2_sk_…` | the key |
//! | `shopify_token` | `shpat_`, `shpca_`, `shppa_`, `shpss_` + 32 hex digits | the token |
//! | `digitalocean_token` | `dop_v1_`, `doo_v1_`, `dor_v1_` + 64 hex digits | the token |
//! | `mailchimp_api_key` | 32 hex digits + `-us` and a data-centre number | the key |
//! | `databricks_token` | `dapi` + 32 hex digits | the token |
//! | `postman_api_key` | `PMAK-` + 24 + `-` + 34 hex digits | the key |
//! | `grafana_token` | Grafana Cloud `glc_…` and service-account `glsa_…` tokens | the token |
//! | `newrelic_key` | `NRAK-` + 27 characters | the key |
//! | `sentry_token` | `sntrys_…` (organisation) and `sntryu_…` (user) auth tokens | the token |
//! | `vault_token` | HashiCorp Vault `hvs.…` and `hvb.…` tokens | the token |
//! | `consul_token` | a Consul ACL token (a UUID) given to one of Consul's token settings: `initial_management`, `agent_recovery`, the `acl_*_token` settings, `CONSUL_HTTP_TOKEN`, or `agent`, `default`, `replication`, `dns`, `master` inside a `tokens` block (HCL or JSON); a UUID of one digit repeated but for one or two is left (the anonymous token's id) | the token |
//! | `terraform_token` | HCP Terraform `….atlasv1.…` tokens | the token |
//! | `doppler_token` | `dp.pt.`, `dp.st.`, `dp.sa.`, `dp.ct.`, `dp.scim.`, `dp.audit.` tokens | the token |
//! | `pulumi_token` | `pul-` + 40 hex digits | the token |
//! | `supabase_token` | `sbp_` + 40 hex digits | the token |
//! | `age_secret_key` | `AGE-SECRET-KEY-1…` | the key |
//! | `azure_ad_client_secret` | Microsoft Entra ID client secrets (three characters, a digit, `Q~`, 31–34 characters) | the secret |
//! | `mapbox_token` | secret tokens `sk.eyJ…` (public `pk.` tokens are left) | the token |
//! | `square_token` | `sq0atp-…`, `sq0csp-…` | the token |
//! | `linear_api_key` | `lin_api_` + 40 characters | the key |
//! | `atlassian_api_token` | `ATATT3…` | the token |
//! | `heroku_token` | Heroku platform API tokens: `HRKU-` and 40 or more characters | the token |
//! | `mailgun_api_key` | Mailgun API keys: 32 hex digits, then 8 and 8 after hyphens, or the older `key-` and 32 hex digits | the key |
//! | `telegram_bot_token` | bot id, `:AA` and 33 characters, also inside `https://api.telegram.org/bot…/` | the token |
//! | `webhook_url` | Slack (`hooks.slack.com/services/…`, `/workflows/…`, `/triggers/…`), Discord (`discord.com/api/webhooks/…`, also `/api/v10/webhooks/…`) and Microsoft Teams (`….webhook.office.com/webhookb2/…/IncomingWebhook/…`, `outlook.office.com/webhook/…`) incoming-webhook URLs | the secret path segment; workspace, channel, group and tenant ids are kept |
//! | `jwt` | JSON Web Tokens: `eyJ…` header, `ey…` payload and (optional) signature, dot-separated base64url | the token |
//! | `azure_storage_key` | `AccountKey=` and `SharedAccessKey=` in Azure connection strings; a SAS token's `sig=` next to its `sv=`/`sp=`/`se=` parameters | the key or signature |
//! | `authorization_header` | the credentials of an `Authorization:` or `Proxy-Authorization:` header (`Bearer`, `Basic`, `Token`, `Bot`, `ApiKey`, `sso-key`, Okta's `SSWS`, … or no scheme) in HTTP dumps, `curl -H`, code and config; a token after a bare `Bearer` (logs) | the credentials |
//! | `cli_password` | a password on a command line: `curl`/`wget`/httpie/`xh` `-u`/`--user`/`-a`/`--auth user:PASS` (also `user:'PASS'`) (also across `\` continuation lines), `mysql`/`mysqldump`/`mariadb -pPASS` (also named by a path), `redis-cli -a PASS`, `sshpass -p PASS`, any command's quoted `--passphrase "…"` or `--password '…'`, a key or token given to a flag (`--api-key …`, `--token …`, `--client-secret …`; not a variable, a placeholder or a list of settings), `sqlcmd`/`bcp`/`osql -P …`, OpenLDAP's `ldapsearch … -w …`, Windows' `net use \\host\share … /user:NAME …` (the password after the share or the user; not `*`), Samba's `smbclient -U 'DOMAIN\user%…'`, `lftp -u user,…`, Oracle's `sqlplus`/`expdp`/`impdp`/`sqlldr user/…@db`, `docker login -p …` and `echo '…' | docker login --password-stdin`, an Erlang node's `-setcookie …`, and `openssl`'s hex `-K …` | the password, quotes kept |
//! | `registry_auth` | Docker `config.json` `"auth"` and `.npmrc` `_auth` values that decode to `user:password`; a Kubernetes pull secret's `.dockerconfigjson` / `.dockercfg` that decodes to a Docker config with credentials | the base64 value |
//! | `registry_token` | the token under a host in Composer's `auth.json` (`github-oauth`, `gitlab-token`, `gitlab-oauth`, `bearer`); the first host of each block | the token |
//! | `connection_string_password` | the password in `scheme://user:PASSWORD@host` for any scheme (postgres, mysql, mongodb+srv, redis, amqp, https, …), as in `.git-credentials`; the `Password=` or `Pwd=` of a `key=value;` connection string (ADO.NET, ODBC) that `password_assignment` leaves, such as one starting with `!` or `#` or braced as ODBC braces it (`Pwd={…}`), also in a string cut into literals (`"UID=etl;"` `"PWD=#…;"`); the password of a Go `user:PASSWORD@tcp(host)/db` DSN; a Bundler gem-server credential (`BUNDLE_HOST__COM: user:PASSWORD`) | the password only |
//! | `url_credential` | a generated token as a URL's whole user part (`https://TOKEN@host`), after a `/key/`, `/token/`, `/apikey/`, `/secret/`, `/hooks/` or `/webhooks/` path segment, or in an `X-Amz-Signature=`, `X-Goog-Signature=`, `signature=`, `sig=`, `hmac=`, `key=`, `appid=`, `p=` or `pass=` query parameter (InfluxDB's `u=…&p=…`) (also after a template's `{city}` or `${…}` among the parameters, or a marker where an earlier rule masked one, as a presigned URL's access key id) | the token |
//! | `pgpass_password` | the last field of a PostgreSQL `.pgpass` line, `host:port:database:user:password` (also echoed into one: `echo "…" >> ~/.pgpass`) (the host a name, an address or `*`; the port digits or `*`; `\:` escapes allowed); the password of a PgBouncer `userlist.txt` line, `"user" "password"`, in a text made of such lines (not an `md5…` or `SCRAM-SHA-256$…` verifier) | the password |
//! | `netrc_password` | the password of a `.netrc` / `.authinfo` entry: `machine HOST login USER password PASS`, on one line or several | the password |
//! | `xml_secret` | the text of a secret-named XML element (`<password>`, `<ApiKey>`, `<secret>` …, e.g. Maven `settings.xml`), `<add key="…Password" value="…"/>` (.NET `appSettings`, NuGet `ClearTextPassword`), an element whose `name` or `key` attribute is secret-named with a `value` attribute or text (`<property name="db.password" value="…"/>`, `<entry key="smtp.password">…</entry>`, .NET `<setting name="SmtpPassword"><value>…</value></setting>`), a random-looking value under a key-named `key` or `name` attribute (`<add key="JwtSigningKey" value="…"/>`), Hadoop-style `<name>fs.s3a.secret.key</name><value>…</value>` (also a Jenkins parameter's `<defaultValue>`, after its `<description>`), and a secret-named element's `<Value>` child (a Windows answer file's `<AdministratorPassword><Value>…</Value>`); Maven's and Jenkins' braced ciphertext (`{COQL…=}`) counts as a value | the value |
//! | `yaml_block_secret` | a YAML block scalar (`\|`, `>`, `\|-`, `>-` …) under a secret-named key | the block's lines, from the first content character to the end of the last line |
//! | `dockerfile_secret` | `ENV NAME value` / `ARG NAME value` (the space-separated form) with a secret-named `NAME`; the `NAME=value` form is `password_assignment` | the value |
//! | `code_credential` | a password passed as a string literal in code: PHP `define('DB_PASSWORD', '…')` (any secret-named constant), the second argument of `new NetworkCredential(user, "…")`, `PasswordAuthentication`, `UsernamePasswordCredentials`, `HTTPBasicAuth`/`HTTPDigestAuth`, `BasicAuth`, `SetBasicAuth`, `basicAuth`, `basic_auth` (also `Some("…")`), `auth(user, "…")`, `auth=(user, "…")`, `login(user, "…")`, and the third of JDBC `getConnection(url, user, "…")` and Go's `smtp.PlainAuth("", user, "…", host)`, OkHttp's `Credentials.basic(user, "…")`, a builder's `.credentials(user, "…")`, Rust's `Credentials::new(user, "…")`, PHP's `new PDO($dsn, $user, "…")` and `mysqli_connect`, a JWT library's `jwt.sign(payload, "…")`, a secret-named lookup's default (`env('DB_PASSWORD', '…')`, `os.environ.setdefault("API_TOKEN", "…")`, `os.getenv`, `ENV.fetch`) or fallback (`process.env.JWT_SECRET ?? '…'` or `|| '…'`, Python's `os.getenv("DB_PASSWORD") or '…'`; a key-named one's, `env('APP_KEY', 'base64:…')`, when it looks random), a password given by position (the third argument of Perl's `DBI->connect` and of Sequelize, the fourth of C's `mysql_real_connect`, the fifth of Ruby's `Net::SMTP.start`; paramiko's `connect(host, port, user, "…")`, ldap3's `Connection(server, user, "…")`, pika's `PlainCredentials(user, "…")`, ftplib's `FTP(host, user, "…")`, Go's `ssh.Password("…")`, Arduino's `WiFi.begin(ssid, "…")`), curl's `CURLOPT_USERPWD, "user:…"`, a URL template's password argument (`Sprintf("…://%s:%s@…", user, "…")`, `"…://{}:{}@…".format(user, "…")`), SQL's `IDENTIFIED BY '…'`, `WITH … PASSWORD '…'` and `CREATE ROLE … PASSWORD '…'` / `ALTER USER … PASSWORD '…'`, PowerShell's `ConvertTo-SecureString "…" -AsPlainText`, C's `#define MQTT_PASSWORD "…"` or `#define BROKER_AUTH_KEY "…"` (a generated value) (the arguments may span lines); the one string argument of a setter or builder named after a credential (`setPassword("…")`, `withPassword("…")`, `setApiKey("…")`, `.password("…")`, `.clientSecret("…")`); the default of a secret-named command-line flag a program defines (`add_argument("--db-password", default="…")`, `@click.option("--api-token", default="…")`); four or more characters | the password, quotes kept |
//! | `password_assignment` | a value assigned to a name ending in `password`, `passwd`, `passphrase`, `pwd`, `psk`, `authtok`, `secret`, `token`, `api_key`/`apikey`, `access_key`, `private_key` or `license_key` (optionally followed by `key` or `value`, so `secret_key`, `clientSecret`, `DB_PASSWORD`, `x-api-key`), or in `pass` as an upper-case word (`DB_PASS`, `SMTP_PASS`), after a word naming what it opens (`ansible_ssh_pass`, RabbitMQ's `default_pass`) or the whole name (`--pass`), or in `pw` as a whole word (`jdbc.reporting.pw`, `DB_PW`), with `=`, `:`, `:=` or `=>`, in env, YAML, INI, JSON, XML-attribute, URL-query, CLI-flag and code styles, and after a type annotation (`db_password: str = "…"`, `static TOKEN: &str = "…"`), also through an index (`$config['db_password'] = …`) and a C array's size (`char api_token[] = "…"`, a literal only); the value is quoted (also in triple quotes, as Grafana quotes one holding `#` or `;`) or bare, at least 6 characters, no whitespace (a bare value on a line of its own runs to the line's end, `&` and all; in a URL's query `&` ends it). Also: the `value` of a name/value pair whose `name` is secret-named (Kubernetes `env` entries `- name: DB_PASSWORD` / `value: …`, ECS `{"name": …, "value": …}`, a Postman variable's `"key": …,` / `"value": …` on the next line, also written value first: `- value: …` / `name: DB_PASSWORD`), or key-named when the value looks random (`- name: SESSION_SIGNING_KEY` / `value: "7ef3…"`), and a random printable key under a secret name, judged whole as `high_entropy_key` judges one (`SESSION_SECRET=jPdEMw!yUig…(1LV…&__$`), and a quoted passphrase with spaces under an upper-case password or secret name in an env file (`DB_PASSWORD="correct horse battery staple"`), in YAML (`key_passphrase: "…"`) or unquoted after `=` (`.properties`), where the value must hold a digit or a symbol or be an app password's four groups of four letters (a locale's `password: Mot de passe` is a label); one ending in `.`, `?` or `!` only when it holds a digit, since a message ends so too. Also the `default` of a Terraform `variable` with a secret-named name, a Gradle or Groovy setting written as a call without parentheses (`storePassword '…'` alone on its line), Redis's `requirepass` and `masterauth` and an ACL user's `>…` (`user NAME on >…`, `ACL SETUSER`), OpenLDAP's `rootpw` (not a `{SSHA}` hash), a Nagios `$USER3$=` macro (not a path), an AsciiDoc labelled `password:: …` entry, a Dovecot passwd-file's `{PLAIN}` or `{CLEAR}` password, a secret-named directive and its value separated by spaces (Mosquitto's `remote_password …`; not a table's column, `api_token CHAR(64),`), a secret-named header set by nginx (`proxy_set_header X-Api-Key "…"`; an `Authorization` header's credentials after its scheme), HAProxy's `stats auth user:…` and `insecure-password …`, Postfix's `static:user:…` password map and `sasl_passwd` lines (`[host]:587 user:…`), a Caddy DNS provider's token (`dns cloudflare …`), Dovecot's `dnpass`, a secret-named Clojure or EDN keyword (`:password "…"`), strongSwan's `: PSK "…"`, an SNMP `rocommunity`/`rwcommunity`, a Redis client's one-argument `auth("…")` (a generated value with a digit), a value after a YAML anchor (`db_pass: &dbpass "…"`), php-fpm's `env[DB_PASSWORD] = …`, a `Password: …` whose value runs into an `=` (`Zq4=Tw…`, not a type annotation), a chosen password ending in `?` (`Lantern2047?`), `SSHPASS`, a shell variable set by fish (`set -gx DB_PASSWORD …`) or csh (`setenv DB_PASSWORD …`) or given a `${DB_PASSWORD:-…}` default or a Spring `${mail.smtp.pass:…}` one (a key- or salt-named one when the value looks random), a secret-named literal wrapped in Go's `[]byte("…")`, the password line of an OpenVPN configuration's inline `<auth-user-pass>` block, and an encoded literal decoded where a secret-named name is assigned it (`BIND_PW = new String(Base64.getDecoder().decode("…"))`, `CLIENT_SECRET = b64decode("…")`: the encoded literal is masked), a generated value under an upper-case name ending in `_PAT` (a personal access token's: `AZURE_DEVOPS_EXT_PAT`), and the `result` of a `random_password` resource in a Terraform state (the last `"type"` before it, within 4 KiB, declares it) | the value, quotes kept |
//! | `prose_credential` | a credential written in prose (a README, a runbook, an e-mail, notes): a value right after "password", "passphrase", "pw", "credential", "API key", "pre-shared key" or a bold `**pass:**` label quoted as its markup quotes (Markdown's backquotes, reStructuredText's ``…``, DokuWiki's ''…'', Jira's {{…}}, bold, HTML's `<strong>` and `<b>`, double quotes), an unquoted one right after "password", "passphrase" or "login" or that one "is" (`uses the passphrase …`, `the root pw on the NAS is …`), a `user` / `…` pair in backquotes on a line with a login word, an unquoted `user / …` after "log in", "sign in" or "login/pass" (words joined with a digit count there), or ending a line (a chat's answer) within 400 bytes of a question about a login or credentials, a value after a bold `**Password:**` label, a Markdown or Textile table row whose label is secret-named (`\| Password \| … \|`, `\| Пароль \| … \|`, a Textile `@…@` value), an HTML table row so labelled (`<th>Password</th><td>…</td>`, `<td>Maintenance password</td><td>…</td>`), a cell with no space under a table column whose header ends in a secret word or the word for password in another language — Markdown and Confluence (`\| DB password \|`, `\|\|Password\|\|`; a value in bold or Confluence's `{{…}}`), MediaWiki (`! Host !! User !! Password`), HTML (`<th>Passcode</th>`, `<th>Lösenord</th>`), and a CSV or tab-separated row under a secret-named column of the text's first line (`system,url,username,password`); under a password column, words joined with a digit are a chosen password (`HarborLantern5521`), unless they name where one is kept (`see-1Password`), "the key is …" or "API key …" with a random-looking or chosen value, and a value after the word for password in another language and a colon, `=` or a dash (`Passwort: …`, `**Passwort:** …`, `mot de passe : « … »`, `contraseña: …`, `пароль: …`, `密码：…`, `パスワード: 「…」`; some thirty languages) or that a sentence in one says the password is (`het wachtwoord is …`, `パスワードは「…」です`); the value must read as a credential: eight or more characters of three of upper case, lower case, digits and punctuation, no brackets, slashes, `$` or separators of code, not words unless it also holds a digit and a symbol (`zephyr*Bramble6`, a chosen password) | the value |
//! | `high_entropy_key` | a random-looking value (20 or more base64 characters mixing upper case, lower case and digits with Shannon entropy ≥ 3.5 bits, 32 or more hex digits, Laravel's `base64:…`, a comma-separated list of such keys, or — quoted — 32 or more printable characters of three classes with punctuation and entropy ≥ 4 bits, or — quoted or bare — a key of 32 or more random printable characters as Django's generator writes them, `%(`, `$`, `&` and `(` included by chance (entropy ≥ 4.3 bits, some punctuation beyond base64's, not starting as a template, a reference or YAML markup does, no call or member of code in it); never a unit of up to 16 characters repeated, as a known-answer test's `0123456789abcdef0123456789abcdef`, nor bytes in hex that count up, FIPS-197's `000102…0f`) assigned to a name whose last word is `key`, `keys`, `key_base`, `salt`, `pepper`, `hmac`, `credentials`, `auth`, `encrypt`, `kek` or `dek`, optionally followed by the key's encoding (`hex`, `b64`, `base64`, `bytes`): `secret_key_base`, `APP_KEY`, `APP_KEYS`, `FERNET_KEY`, `signingKey`, `ENCRYPTION_KEY`, `PASSWORD_SALT`, Drupal's `$settings['hash_salt']`, `keyHex`, Consul's `encrypt`, C's `char hmac_key[] = "…"`; and WordPress's `define('AUTH_KEY', '…')` / `define('NONCE_SALT', '…')` (64 random printable characters, `{{` or `%s` among them); such a value under Rust's `&[u8]`, `[u8; N]` (`b"…"`) or `&str`, in Go's `[]byte("…")` or given to a decoder (`Base64.getDecoder().decode("…")`, `hex.DecodeString("…")`, `bytes.fromhex("…")`, `base64.b64decode("…")`, `Convert.FromBase64String("…")`, `parseHex("…")`, Rust's `hex!("…")`, PHP's `hex2bin('…')`, also bare: `b64decode("…")`, and Go's `key, _ = hex.DecodeString("…")`); such a value given to a key constructor, directly or through a decoder, whatever the name (`new SecretKeySpec(HexFormat.of().parseHex("…"), "AES")`, `new SymmetricSecurityKey(Convert.FromBase64String("…"))`, Swift's `SymmetricKey(data: Data(base64Encoded: "…")!)`, Dart's `Key.fromBase64("…")`); a Fernet key given to `Fernet(b"…")`; a key written as 16 or more random-looking bytes under such a name (or a secret's, `DEK`, `KEK`), as an array of byte literals (`static const uint8_t ota_key[16] = { 0xf3, … }`, `const DEK: [u8; 16] = [0x26, …]`, `new byte[] { 0x58, (byte) 0xFE, … }`) or a bytes literal of escapes (`_KEY = b"\x77\x6b…"`), not a local `let` binding (a test's vectors), bytes that are text or count up, or a public key's; such a value given to an HMAC as its key (`OpenSSL::HMAC.hexdigest(alg, "…", data)`, `createHmac(alg, "…")` also through `Buffer.from("…", enc)`, Python's `hmac.new(b"…")` also through `bytes.fromhex`, Go's `hmac.New(h, []byte("…"))`) | the value |
//!
//! Names are "secret-named" for `xml_secret`, `yaml_block_secret` and `dockerfile_secret` by the
//! same words as `password_assignment`.
//!
//! # What is deliberately not masked
//!
//! Masking errs towards hiding, but a false positive destroys evidence: a rule that fires on
//! every second line of code would bury the real findings and waste the reader's budget. So
//! these are left alone:
//!
//! - **References and templates**: `${VAR}`, `$VAR`, `$(cmd)`, `{{ … }}`, `%VAR%`, `@VAR@`,
//!   `%(name)s`, `%s`, `{name}`, `<your-password>` and other `<…>` placeholders, anything
//!   starting with `your` or `replace`, containing `YOUR`/`Your`/`your_`/`replace_me`, or ending
//!   in `_here`; and references to a secret kept elsewhere: AWS ARNs (`arn:…`, also a
//!   colon-delimited `…:secret:name` inside one), `vault:`, `ref+`, `secretsmanager:`, `ssm:`,
//!   `sops:`, `keyvault:`, `env:` and `file:` values, Google Secret Manager paths
//!   (`projects/…/secrets/…`), `op://` and other URLs, CloudFormation `!Ref` and
//!   `{{resolve:…}}`, `@Microsoft.KeyVault(…)`, Vault key/value paths (`secret/data/…`), and
//!   Kubernetes `secretKeyRef` / `secretName` and Helm's `existingSecret` (they name a secret;
//!   their `key: password` is the name of a field).
//! - **Committed ciphertext and labels**: a SealedSecret's `Ag…` ciphertext, SOPS's `ENC[AES256_GCM,…]` and Jasypt's `ENC(…)`, and the words
//!   "password" and "secret" in other languages as a value (`password: "Passwort"` in a
//!   locale file, or a message holding one outside ASCII, `パスワードをお忘れですか？`); under a token or key name, a value with letters outside ASCII or only a
//!   word's capital (`"API-Schlüssel"`, `"Zugriffstoken"`) is not generated, so a locale's
//!   label for one stays.
//! - **Stand-ins**: values starting `change-me`, `changeme` or `change_this` (an instruction), values containing a run of four `x`, `X` or `*`, or wrapped in `*` (Sysprep's `*SENSITIVE*DATA*DELETED*`), `•••`, or an ellipsis
//!   (`sk-...`, `ghp_xxxx…`, `AKIAXXXXXXXXXXXXXXXX`); vendor-shaped tokens whose last 16
//!   characters use at most three distinct characters (`T00000000/B00000000/XXXXXXXX…`); and
//!   vendor-shaped tokens containing `your`, `replace`, `_here` or `placeholder`.
//! - **Placeholder words** (case-insensitive, whole value, also bracketed or as alternatives:
//!   `[REDACTED]`, `true/false`): `changeme`, `change_me`, `change-me`, `changeit`,
//!   `changethis`, `change_this`, `password`, `passwd`, `pass`, `pwd`, `secret`, `token`,
//!   `example`, `placeholder`, `redacted`, `dummy`, `hidden`, `masked`, `default`, `empty`,
//!   `required`, `optional`, `string`, `none`, `null`, `nil`, `undefined`, `true`, `false`,
//!   `yes`, `no`, `todo`, `fixme`, `tbd`; and values made only of `*`, `x`, `.`, `-`, `_`.
//!   `changeme` and `changeit` are well-known defaults: printing them reveals nothing a reader
//!   of the documentation does not already know, and they are everywhere in sample
//!   configuration.
//! - **Published examples**: values that a vendor or standard publishes as *the* example and
//!   that are public by design — real working code carries them and they grant nothing — are
//!   listed verbatim (`PUBLISHED_EXAMPLES`) and never masked by any rule: the Azure Storage
//!   emulator's (Azurite's) well-known account key, jwt.io's sample token (signed with the
//!   published `your-256-bit-secret`), RFC 7617's `Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==`, and the
//!   Kubernetes documentation's Secret example (`MWYyZDFlMmU2N2Rm` / `1f2d1e2e67df`). Example
//!   keys that *stand in* for a live credential of a real service are masked like the key they
//!   imitate — AWS's `AKIAIOSFODNN7EXAMPLE` / `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` and
//!   GitHub's documented `ghs_16C7e42F292c6912E7710c838347Ae178B4a` included: they have the full
//!   shape of a live key, a rule could tell them apart only by an ever-growing list, tools and
//!   tests (ctxpack's own among them) use them as the canary that masking works, and masking
//!   one costs a reader nothing but an example value. No rule keys on the words `EXAMPLE` or
//!   `FAKE` inside a value.
//! - **Public, test-mode and identifying values**: public keys and certificates (also a
//!   base64-encoded certificate in a kubeconfig), `ssh-… AAAA…` public keys, Stripe `sk_test_…`,
//!   `rk_test_…`, `pk_test_…` and publishable `pk_live_…` keys, Twilio account SIDs (`AC…`),
//!   Google OAuth client ids, Mapbox `pk.` tokens (whatever follows the dot), a Sentry DSN's
//!   client key and an Algolia search-only `apiKey` in a DocSearch configuration (beside
//!   `appId` and `indexName`): they ship in web pages. Also UUIDs (and identifiers ending in a UUID's last four groups,
//!   WebDriver's `window-fcc6-…`), git SHAs and checksums under names
//!   that are not secret-named; and values under key names that are identifiers or public
//!   material: `public`/`publishable`/`pub`, `primary`, `foreign`, `partition`, `sort`,
//!   `range`, `cache`, `idempotency`, `dedup`, `lookup`, `hash`, `row`, `map`, `index` keys.
//! - **The name of a credential rather than its value**: a value of letters and `_`/`-`/`.`
//!   only — separated, all lower case, or a camelCase identifier — that itself contains
//!   `pass`, `pwd`, `secret`, `token`, `key`, `auth` or `cred` (`"refresh_token"`,
//!   `"X-Api-Key"`, `token=authtoken`, `"maxTokens"`; `Password=FakePassword` is still masked).
//! - **Plain words and labels assigned to a token or key name**: tokens and API keys are
//!   generated, so for names ending in `token`, `api_key`, `access_key` or `private_key` the
//!   value must mix two of lower case, upper case and digits, or be 20 characters or longer,
//!   and must not be words, numbers and short tags joined by `_`, `-` or `.` (`zToken =
//!   "coalesce"` in a lexer, `"access_token": "access-1"` in a test). Names with `pass`, `pwd`
//!   or `secret` take any value: people choose passwords that are plain words. The same holds
//!   for `Authorization` credentials (`Bearer blahblahblah` stays), URL tokens and
//!   `high_entropy_key`, whose values must also look random: not identifier words
//!   (`sqlite3BtreePayloadSize`), with entropy as above.
//! - **Code, not data** (bare, unquoted values only): function calls, indexing, generics and
//!   closures (`get_password()`, `os.environ["X"]`, `Option<String>`, `|token: &Token|`),
//!   attribute and path access (`self.token`, `process.env.TOKEN`, `cfg.Password`, `token?`,
//!   anything containing `::`), values starting with `* & ! | # @` (dereferences, references,
//!   negations, YAML tags and comments, annotations), any bare value followed by `,` or `;`
//!   after a spaced `=` or a `:` (`token: Token,`, `nToken = iEnd-iStart;`), a bare key value
//!   followed by `(`, `[`, `.`, `->`, `?` or `!`, and a type annotation followed by `=`
//!   (`NEXT_TOKEN: AtomicUsize = …`), and a GraphQL schema's built-in scalar as a field's type
//!   (`password: String!`). After a type annotation only a string literal is data,
//!   and only a credential-shaped one (eight or more characters mixing letters and digits, not
//!   words, not a dotted number or a braced GUID): `const SERVICE_PASSWORD: &str = "TRUNCATE"`
//!   names a protocol string. A bare word of letters only (or digits only) after a spaced `=`,
//!   `:=`, `=>` or a `:` is read as a variable, type or prose (`password: str`, `token =
//!   next_token`, `max_token = 100000`) — unless the name is UPPER_CASE (`DB_PASSWORD:
//!   postgres`) or the `=` is tight (`PASSWORD=hunter`, as in env files, URL queries and
//!   `Password=…;` connection strings), where it is data. A bare word mixing letters and digits
//!   (`password: hunter2`) is masked. In code, `pass` is a pass over something
//!   (`render_pass`, `first_pass`, `bypass`), so only upper-case `…_PASS` names and `pass`
//!   itself count.
//! - **Comparisons and paths**: `==` and `::` are not assignments (`if token == "…"`,
//!   `token::Kind`); a lower-case absolute or relative path (`PWD=/home/me`,
//!   `secret: /run/secrets/db`) and anything containing `://` (the connection-string rule
//!   handles URLs) are not secrets.
//! - **Values with whitespace and prose**: in code, YAML and JSON a quoted string with spaces
//!   assigned to `password` is almost always a prompt or a message, so it is not masked; only
//!   an env-file line (`NAME="…"` or `export NAME='…'`, the name upper case and ending in a
//!   password or secret word) holds a passphrase, and even there a message is left alone: a
//!   value with words such as `password`, `enter`, `invalid`, `your`, `the`, ending in `.`, `:`,
//!   `?`, `!` or `,`, or holding `$`, `%`, `{`, `<`. Nor is a one-line YAML block of prose
//!   under a secret-named key masked, nor an `Authorization` header or `Bearer` mentioned in a
//!   sentence.
//! - **Passwords named without a literal in code**: `new NetworkCredential(user, password)`,
//!   `define('DB_PASSWORD', getenv('DB_PASSWORD'))`, `HTTPBasicAuth(settings.USER,
//!   settings.PASSWORD)`, `login("admin", "password")` (a placeholder word); a `.pgpass`-shaped
//!   line whose host is a number (`00:11:22:33:44:55`) or whose fields are the format's names
//!   (`hostname:port:database:username:password`).
//! - **Command lines and headers without a password**: `mysql -p` (a prompt),
//!   `curl -u "$USER:$PASS"`, `curl -u "$API_KEY:"`, `curl -u me@example.com:api_token` (the
//!   name of what goes there), `ARG NPM_TOKEN` without a value, and `Basic` credentials that
//!   decode to a placeholder password (`dXNlcm5hbWU6cGFzc3dvcmQ=` is `username:password`).
//!
//! Limits: a secret split across two chunks, a private-key chunk that holds neither the BEGIN
//! nor the END line, names that do not end in a keyword (`password_confirmation`), a password
//! passed positionally to a call the rules do not name (`Client(sid, "auth-token")`), the
//! hosts after the first in one Composer `auth.json` block, a credential-shaped literal after a type
//! annotation that is a plain word (`password: str = "postgres"`), a `.netrc` entry without a
//! `login`, vendor tokens without a rule of their own outside an assignment, and
//! hashes or keys that are simply long random strings with no name around them are not caught.
//! Published test passwords and test keys (`password=alice-pw` in a test, a self-signed test
//! certificate's key) are masked: the rules judge shapes, not intent.
//!
//! # Speed
//!
//! One pass of a lazy DFA of each rule's required literals or short patterns (`AKIA`, `ghp_`,
//! `://`, `password`, …) runs first; a rule's full expression runs only when its literal
//! occurs, and text with none of them is returned borrowed after that single pass.
//!
//! ```
//! use ctxpack_core::Masker;
//!
//! let masker = Masker::new();
//! let (masked, counts) = masker.mask("DB_PASSWORD=s3cr3t!pass\nGITHUB_TOKEN=ghp_FAKEfake0123456789FAKEfake0123456789\n");
//! assert_eq!(masked, "DB_PASSWORD=[REDACTED:password_assignment]\nGITHUB_TOKEN=[REDACTED:github_token]\n");
//! assert_eq!(counts["github_token"], 1);
//! assert_eq!(counts["password_assignment"], 1);
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::{Arc, OnceLock};

use regex::{Captures, Regex};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::pool::Pool;
use regex_automata::{Input, MatchKind, PatternSet};

mod code;
mod infra;
mod keys;
mod locate;
mod prose;
mod rules;
mod shape;
mod tables;
#[cfg(test)]
mod tests;
mod tokens;

use code::*;
use infra::*;
use keys::*;
use locate::*;
use prose::*;
use rules::specs;
use shape::*;
use tables::*;

/// Bumped whenever the rule set changes (stored text is masked at index time).
pub const MASK_RULES_VERSION: u32 = 45;

/// How every marker starts; no rule accepts a value that contains it, which is what makes
/// masking idempotent.
const MARKER_PREFIX: &str = "[REDACTED:";

/// The marker that replaces a secret of `kind`: `[REDACTED:<kind>]`.
pub fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}]")
}

/// Values that vendors and standards publish as *the* example and that are public by design:
/// real working code carries them and they grant nothing. See "Published examples" in the
/// module documentation for why the AWS example pair is not here.
const PUBLISHED_EXAMPLES: &[&str] = &[
    // The Azure Storage emulator's (Azurite's) account key: the same fixed value on every
    // machine that runs the emulator.
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    // jwt.io's sample token, signed with the published key `your-256-bit-secret`.
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    // RFC 7617's Basic credentials (`Aladdin:open sesame`), repeated by MDN and most HTTP docs.
    "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    // The Kubernetes documentation's Secret example (`1f2d1e2e67df`, plain and base64).
    "MWYyZDFlMmU2N2Rm",
    "1f2d1e2e67df",
];

/// Picks the byte range to replace, or `None` when the match is not a secret. The range
/// usually lies inside the match; a YAML block scalar's lines follow it.
type Locate = fn(&Captures<'_>, &str) -> Option<(usize, usize)>;

/// One documented rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The snake_case kind, as written in the marker and counted in the redaction summary.
    pub kind: &'static str,
    /// What the rule catches, in one sentence.
    pub description: &'static str,
    pattern: &'static str,
    /// Compiled on first use: most texts never reach most rules past the prefilter, and
    /// compiling all seventy costs a short command more than its work.
    regex: OnceLock<Regex>,
    locate: Locate,
    marker: String,
}

impl Rule {
    /// The rule's full expression.
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            Regex::new(self.pattern).expect("mask rule patterns are constants covered by tests")
        })
    }

    /// Replaces every accepted match in `text`, or returns `None` when there is none.
    fn apply(&self, text: &str) -> Option<(String, u64)> {
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        for caps in self.regex().captures_iter(text) {
            // A match that starts inside a marker reads the marker's kind as text (the
            // `api_key` of `[REDACTED:openai_api_key]=…` is no key name).
            if caps
                .get(0)
                .is_some_and(|whole| inside_marker(text, whole.start()))
            {
                continue;
            }
            let Some((start, end)) = (self.locate)(&caps, text) else {
                continue;
            };
            // A secret that runs past its match (a block scalar) can swallow the next match's
            // secret; the check also keeps a mistake in a rule from ever slicing backwards.
            if start < last || end <= start || !is_maskable(&text[start..end]) {
                continue;
            }
            out.push_str(&text[last..start]);
            out.push_str(&self.marker);
            last = end;
            count += 1;
        }
        if count == 0 {
            return None;
        }
        out.push_str(&text[last..]);
        Some((out, count))
    }
}

/// The most bytes from a marker's `[` to its `]`: longer than every marker.
const MARKER_BYTES: usize = 64;

/// Whether byte `at` of `text` lies inside a marker, from its `[` to its `]`.
fn inside_marker(text: &str, at: usize) -> bool {
    let from = text.floor_char_boundary(at.saturating_sub(MARKER_BYTES));
    let before = text.get(from..at).unwrap_or_default();
    before
        .rfind(MARKER_PREFIX)
        .is_some_and(|open| !before[open..].contains(']'))
}

/// The checks every rule shares: a marker is never masked again (idempotence) and a published
/// example is not a secret.
fn is_maskable(secret: &str) -> bool {
    !secret.contains(MARKER_PREFIX) && !PUBLISHED_EXAMPLES.contains(&secret)
}

/// A rule as written in the source, before compilation.
struct Spec {
    kind: &'static str,
    description: &'static str,
    /// A necessary condition for an accepted match: wherever the rule masks something, this
    /// pattern occurs in the text.
    prefilter: &'static str,
    pattern: &'static str,
    locate: Locate,
}

/// The compiled rule set.
///
/// Build it once ([`Masker::new`] compiles some seventy expressions) and share it: masking takes
/// `&self`, the type is `Send + Sync`, and cloning it is cheap.
#[derive(Clone, Debug)]
pub struct Masker {
    rules: Vec<Rule>,
    /// Pattern `i` is the required literal of `rules[i]`.
    prefilter: Arc<Prefilter>,
}

/// Makes a search cache for the prefilter's DFA.
type NewCache = Box<dyn Fn() -> Cache + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// The rules' required literals as one forward lazy DFA that reports every pattern occurring
/// anywhere in a text, in one pass. Only which patterns occur is asked, never where, so a
/// general regular expression set (which would also compile the patterns reversed and extract
/// their literals, most of the cost of building one, paid by every process that masks) is not
/// needed.
#[derive(Debug)]
struct Prefilter {
    dfa: DFA,
    /// Search caches, one per thread searching at a time (what a lazy DFA has built so far).
    caches: Pool<Cache, NewCache>,
}

impl Prefilter {
    fn new<'p>(patterns: impl IntoIterator<Item = &'p str>) -> Prefilter {
        let patterns: Vec<&str> = patterns.into_iter().collect();
        // The rules' literals make more states than the default 2 MiB cache holds on varied
        // text, and a lazy DFA whose cache fills clears it and builds the states again: 8 MiB
        // (built only as far as a text needs) made masking a fifth faster on dependency
        // sources, 4 MiB a tenth. Rule set 9's prefilters for prose filled 8 MiB (masking took
        // 1.08 times as long); 16 MiB holds them, for the same peak memory on those sources.
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .cache_capacity(16 << 20),
            )
            .build_many(&patterns)
            .expect("mask prefilter patterns are constants covered by tests");
        let for_caches = dfa.clone();
        let new_cache: NewCache = Box::new(move || for_caches.create_cache());
        Prefilter {
            dfa,
            caches: Pool::new(new_cache),
        }
    }

    /// Which patterns occur in `text`. The DFA has no quit bytes (no Unicode word boundary)
    /// and never gives up on its cache, so the search cannot fail; were it to, every pattern
    /// is reported, which runs every rule: slower, never a secret missed.
    fn matches(&self, text: &str) -> PatternSet {
        let mut set = PatternSet::new(self.dfa.pattern_len());
        let mut cache = self.caches.get();
        if self
            .dfa
            .try_which_overlapping_matches(&mut cache, &Input::new(text), &mut set)
            .is_err()
        {
            for index in 0..self.dfa.pattern_len() {
                set.insert(regex_automata::PatternID::must(index));
            }
        }
        set
    }
}

impl Masker {
    /// Compiles the rule set. It never fails: the rules are constants, checked by the tests.
    pub fn new() -> Masker {
        let rules = specs()
            .map(|spec| Rule {
                kind: spec.kind,
                description: spec.description,
                pattern: spec.pattern,
                regex: OnceLock::new(),
                locate: spec.locate,
                marker: format!("{MARKER_PREFIX}{}]", spec.kind),
            })
            .collect();
        let prefilter = Arc::new(Prefilter::new(specs().map(|spec| spec.prefilter)));
        Masker { rules, prefilter }
    }

    /// The rules, in the order they run.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Returns the masked text and counts per kind (BTreeMap<String, u64>); the text is
    /// unchanged (borrowed) when nothing matched.
    pub fn mask<'a>(&self, text: &'a str) -> (Cow<'a, str>, BTreeMap<String, u64>) {
        let mut counts = BTreeMap::new();
        let mut current = Cow::Borrowed(text);
        // The set reports, in rule order, every rule whose required literal occurs. Masking
        // only removes text and adds markers, and no rule accepts a marker, so a rule skipped
        // here could not have matched the partly masked text either.
        for index in self.prefilter.matches(text).iter() {
            let rule = &self.rules[index.as_usize()];
            if let Some((masked, count)) = rule.apply(&current) {
                current = Cow::Owned(masked);
                *counts.entry(rule.kind.to_owned()).or_insert(0) += count;
            }
        }
        (current, counts)
    }
}

impl Default for Masker {
    fn default() -> Masker {
        Masker::new()
    }
}
