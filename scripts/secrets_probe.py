#!/usr/bin/env python3
"""Writes a probe of secret shapes known to leak past masking rules: salts and master
keys under 32 names in eight file styles, tokens under 24 URL query parameters and 18 path
segments, dotenv passphrases with spaces, and 40 configuration and code idioms that pass a
credential (NetworkCredential, define, JDBC, Ansible, .pgpass, registry files, XML properties,
Kubernetes env pairs ...). Every value is generated (seeded); every entry is a positive.

    python3 scripts/secrets_probe.py OUT.jsonl
    cargo run --release -p ctxpack-core --example mask_corpus -- OUT.jsonl | grep unchanged

Not a held-out set: it was written to find which of the listed shapes still leak, and the
rules were changed for what it showed (docs/security.md, rule set 19).
"""
import json, random, string, sys
R=random.Random(7)
def tok(n=32, a=string.ascii_letters+string.digits): return ''.join(R.choice(a) for _ in range(n))
def hexs(n=64): return ''.join(R.choice('0123456789abcdef') for _ in range(n))
def b64(n=44): return ''.join(R.choice(string.ascii_letters+string.digits+'+/') for _ in range(n-1))+'='
def pw(): return R.choice(['Harbor','Falcon','Copper','Lantern'])+str(R.randint(10,99))+R.choice('!#%&*')+R.choice(['maple','orbit','ember'])
out=[]
def add(id,text,secret,file): out.append({"id":id,"kind":"secret","text":text,"secret":secret,"file":file})
# URL query parameters
for name in ['p','pw','pwd','pass','password','key','apikey','api_key','apiKey','token','access_token','auth','auth_token','secret','client_secret','sig','signature','k','code','sessionid','session','private_token','x-api-key','license']:
    s=tok(28)
    add(f"q-{name}", f"curl -s \"https://api.example.net/v2/items?limit=10&{name}={s}&format=json\"\n", s, "scripts/fetch.sh")
# URL path segments
for seg in ['token','key','apikey','secret','auth','hook','webhook','bot','t','k','s','access','private','v1/keys','api/keys','download','share','invite']:
    s=tok(30)
    add(f"path-{seg}", f"WEBHOOK=https://events.example.io/{seg}/{s}\nexport WEBHOOK\n", s, "deploy/env.sh")
# salts / master keys
for name in ['MASTER_KEY','master_key','masterKey','SALT','salt','PASSWORD_SALT','HASH_SALT','COOKIE_SECRET','SESSION_SECRET','JWT_SECRET','SIGNING_SECRET','ENCRYPTION_KEY','encryptionKey','APP_SECRET','SECRET_KEY_BASE','DJANGO_SECRET_KEY','NEXTAUTH_SECRET','AUTH_SECRET','CSRF_SECRET','OTP_SECRET','TOTP_SEED','HMAC_SECRET','SHARED_SECRET','PEPPER','KEYSTORE_PASS','VAULT_UNSEAL_KEY','MASTERKEY','kek','dek','cipher_key','aes_key','crypt_key']:
    for style,fmt,f in [('env','{n}={v}\n','.env'),('yaml','{n}: {v}\n','config.yaml'),('json','{{"{n}": "{v}"}}\n','config.json'),('py','{n} = "{v}"\n','settings.py'),('toml','{n} = "{v}"\n','config.toml'),('js','const {n} = \'{v}\';\n','config.js'),('go','var {n} = "{v}"\n','keys.go'),('ini','{n} = {v}\n','app.ini')]:
        v=R.choice([tok(40),hexs(64),b64(44),tok(50,string.ascii_letters+string.digits+'!@#$%^&*()-_=+')])
        add(f"salt-{name}-{style}", fmt.format(n=name,v=v), v, f"conf/{style}/{f}")
# dotenv with spaces
for name in ['DB_PASSWORD','SMTP_PASS','GPG_PASSPHRASE','KEY_PASSPHRASE','ADMIN_PASSWORD','BACKUP_PASSPHRASE','WIFI_PSK','RESTIC_PASSWORD','BORG_PASSPHRASE','SSH_KEY_PASSPHRASE','VAULT_PASS','MAIL_PASSWORD']:
    for q in ['"',"'"]:
        v=' '.join(R.choice(['correct','horse','battery','staple','purple','monkey','dishwasher','river','stone','Lantern','42','7!']) for _ in range(4))
        qq='d' if q=='"' else 's'
        add(f"dotenv-{name}-{qq}", f"APP_ENV=production\n{name}={q}{v}{q}\nLOG_LEVEL=info\n", v, ".env.production")
# NetworkCredential / define / constructors
cases=[
 ('netcred1','var cred = new NetworkCredential("svc_backup", "{v}");\n','Backup.cs'),
 ('netcred2','client.Credentials = new NetworkCredential("svc_backup", "{v}", "CORP");\n','Mail.cs'),
 ('netcred3','Dim cred As New NetworkCredential("svc", "{v}")\n','Mail.vb'),
 ('define1',"define('DB_PASSWORD', '{v}');\n",'wp-config.php'),
 ('define2','define("SMTP_PASS", "{v}");\n','config.php'),
 ('define3',"define( 'DB_PASSWORD', '{v}' );\n",'wp-config.php'),
 ('define4',"const DB_PASSWORD = '{v}';\n",'config.php'),
 ('pscred','$cred = New-Object System.Management.Automation.PSCredential("admin", (ConvertTo-SecureString "{v}" -AsPlainText -Force))\n','deploy.ps1'),
 ('jdbc','Connection c = DriverManager.getConnection("jdbc:postgresql://db/app", "app", "{v}");\n','Db.java'),
 ('smtp','server.login("alerts@example.com", "{v}")\n','mail.py'),
 ('paramiko','ssh.connect("10.0.0.5", username="deploy", password="{v}")\n','deploy.py'),
 ('pymysql','conn = pymysql.connect(host="db", user="app", passwd="{v}", db="shop")\n','db.py'),
 ('psycopg','conn = psycopg2.connect(dbname="app", user="app", password="{v}", host="db")\n','db.py'),
 ('mongo','client = MongoClient("db", 27017, username="app", password="{v}")\n','db.py'),
 ('redis','r = redis.Redis(host="cache", port=6379, password="{v}")\n','cache.py'),
 ('ldap3','conn = Connection(server, "cn=admin,dc=corp", "{v}", auto_bind=True)\n','ldap.py'),
 ('ftplib','ftp = FTP("ftp.example.com"); ftp.login("upload", "{v}")\n','ftp.py'),
 ('nodemailer','auth: {{ user: "alerts@example.com", pass: "{v}" }}\n','mailer.js'),
 ('knex',"connection: {{ host: 'db', user: 'app', password: '{v}', database: 'shop' }}\n",'knexfile.js'),
 ('go-sql','db, err := sql.Open("mysql", "app:{v}@tcp(db:3306)/shop")\n','db.go'),
 ('rust-pg','let (client, conn) = tokio_postgres::connect("host=db user=app password={v}", NoTls).await?;\n','db.rs'),
 ('ruby-pg',"conn = PG.connect(dbname: 'app', user: 'app', password: '{v}')\n",'db.rb'),
 ('java-props','props.setProperty("mail.smtp.password", "{v}");\n','Mail.java'),
 ('java-put','props.put("password", "{v}");\n','Db.java'),
 ('kotlin','val ds = HikariDataSource().apply {{ username = "app"; password = "{v}" }}\n','Db.kt'),
 ('swift','let credential = URLCredential(user: "api", password: "{v}", persistence: .forSession)\n','Api.swift'),
 ('csharp-conn','var cs = "Server=db;Database=shop;User Id=app;Password={v};";\n','Db.cs'),
 ('php-pdo','$pdo = new PDO("mysql:host=db;dbname=shop", "app", "{v}");\n','db.php'),
 ('ansible1','[web]\nweb01 ansible_host=10.0.0.5 ansible_user=deploy ansible_ssh_pass={v}\n','inventory.ini'),
 ('ansible2','ansible_become_password: "{v}"\n','group_vars/all.yml'),
 ('ansible3','[all:vars]\nansible_password={v}\n','hosts'),
 ('pgpass','db.internal:5432:shop:app:{v}\n','.pgpass'),
 ('npmrc','//registry.npmjs.org/:_authToken={v}\n','.npmrc'),
 ('pypirc','[pypi]\nusername = __token__\npassword = {v}\n','.pypirc'),
 ('nuget','<add key="ClearTextPassword" value="{v}" />\n','nuget.config'),
 ('maven','<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{v}</password>\n</server>\n','settings.xml'),
 ('gradle','nexusPassword={v}\n','gradle.properties'),
 ('xmlprop','<property name="hibernate.connection.password" value="{v}"/>\n','hibernate.cfg.xml'),
 ('xmlprop2','<property>\n  <name>javax.jdo.option.ConnectionPassword</name>\n  <value>{v}</value>\n</property>\n','hive-site.xml'),
 ('k8s-env','env:\n  - name: DB_PASSWORD\n    value: "{v}"\n','deploy.yaml'),
 ('k8s-env2','env:\n- name: API_TOKEN\n  value: {v}\n','deploy.yaml'),
 ('k8s-stringdata','apiVersion: v1\nkind: Secret\nstringData:\n  password: {v}\n','secret.yaml'),
]
for id,fmt,f in cases:
    v=pw() if R.random()<0.5 else tok(20)
    add(f"code-{id}", fmt.format(v=v), v, f"src/{f}")
with open(sys.argv[1] if len(sys.argv) > 1 else 'probe.jsonl','w') as fh:
    for e in out:
        assert e['text'].count(e['secret'])==1, e['id']
        fh.write(json.dumps(e)+"\n")
print(len(out))
