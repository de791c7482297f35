package integration

// What an agent does in its workspace (/work, bind-mounted from the host),
// each compared between moat and runc in TestRealPrograms.

// gitCloneWorkspace clones a repository made in /tmp into the workspace
// and commits there.
const gitCloneWorkspace = `set -e
git init -q /tmp/src
cd /tmp/src
git config user.name moat
git config user.email moat@example.com
for i in 1 2 3; do echo "line $i" > file$i; git add file$i; git commit -q -m "commit $i"; done
git clone -q /tmp/src /work/clone
cd /work/clone
git config user.name moat
git config user.email moat@example.com
echo change >> file2
git commit -q -a -m "in the workspace"
git log --format=%s
git status --short | wc -l
git fsck --no-progress 2>&1 | wc -l
`

const gitCloneWorkspaceOut = `in the workspace
commit 3
commit 2
commit 1
0
0
`

// tarWorkspace makes 100 MiB and more of text, packs it with gzip and
// unpacks it again.
const tarWorkspace = `set -e
cd /work
seq 1 14000000 > data
mkdir out
tar czf data.tgz data
tar xzf data.tgz -C out
cmp data out/data
wc -c < out/data
md5sum < out/data
`

const tarWorkspaceOut = `114888897
f7b8020d0b8d7efff5a5ec7a33296dba  -
`

// venvPip makes a virtual environment and installs a wheel built on the
// spot into it, without an index.
const venvPip = `set -e
cd /work
python3 -m venv v
python3 - <<'PY'
import zipfile, hashlib, base64
files = {
    "demo/__init__.py": b"x = 42\n",
    "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: moat\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile("demo-1.0-py3-none-any.whl", "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("demo-1.0.dist-info/RECORD,,")
    z.writestr("demo-1.0.dist-info/RECORD", "\n".join(record) + "\n")
PY
v/bin/pip install -q --no-index --disable-pip-version-check demo-1.0-py3-none-any.whl
v/bin/python -c 'import demo; print("from the wheel", demo.x)'
`

// makeParallel builds a 20-file C project with make -j2, twice (the
// second time nothing is out of date).
const makeParallel = `set -e
mkdir /work/p && cd /work/p
for i in $(seq 1 20); do
  printf 'int f%d(void) { return %d; }\n' $i $i > f$i.c
done
{
  echo '#include <stdio.h>'
  for i in $(seq 1 20); do echo "int f$i(void);"; done
  echo 'int main(void) { int s = 0;'
  for i in $(seq 1 20); do echo "s += f$i();"; done
  echo 'printf("sum %d\n", s); return 0; }'
} > main.c
printf 'OBJS = main.o %s\nprog: $(OBJS)\n\tcc -o $@ $(OBJS)\n%%.o: %%.c\n\tcc -O2 -c $<\n' "$(seq -f 'f%g.o' -s ' ' 1 20)" > Makefile
make -s -j2
./prog
make -j2 | grep -c 'is up to date'
`

const makeParallelOut = `sum 210
1
`

// pythonOffice writes a minimal .docx and .xlsx (zip packages of XML) and
// reads them back.
const pythonOffice = `import zipfile
docx = {
  "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  "word/document.xml": '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Report from the sandbox</w:t></w:r></w:p></w:body></w:document>',
}
xlsx = {
  "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
  "xl/worksheets/sheet1.xml": '<?xml version="1.0"?><worksheet><sheetData>' + "".join(f'<row r="{i}"><c r="A{i}"><v>{i*i}</v></c></row>' for i in range(1, 1001)) + '</sheetData></worksheet>',
}
for name, parts in (("/work/report.docx", docx), ("/work/table.xlsx", xlsx)):
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for part, text in parts.items():
            z.writestr(part, text)
import re
with zipfile.ZipFile("/work/report.docx") as z:
    print(re.search(r"<w:t>(.*?)</w:t>", z.read("word/document.xml").decode()).group(1))
with zipfile.ZipFile("/work/table.xlsx") as z:
    values = [int(v) for v in re.findall(r"<v>(\d+)</v>", z.read("xl/worksheets/sheet1.xml").decode())]
    print(len(values), sum(values), z.testzip())
`

const pythonOfficeOut = `Report from the sandbox
1000 333833500 None
`
