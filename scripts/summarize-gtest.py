#!/usr/bin/env python3
"""Sums the gtest XML reports meson's gtest protocol leaves behind.

Prints one line per test binary and a closing line
'tests: N passed, N failed, N skipped' (the skipped tests are named, so a
skipped tier is never mistaken for a passed one). Exit 1 if any failed or
if no test ran at all.
"""
import pathlib
import sys
import xml.etree.ElementTree as ET

def main(build_dirs):
    passed = failed = skipped = 0
    skipped_names = []
    for build_dir in build_dirs:
        # meson's gtest protocol leaves <test name>.xml in the build root;
        # meson-logs/testlog.junit.xml repeats them and is not counted.
        for xml in sorted(pathlib.Path(build_dir).glob("*.xml")):
            try:
                root = ET.parse(xml).getroot()
            except ET.ParseError:
                continue
            if root.tag != "testsuites":
                continue
            p = f = s = 0
            for case in root.iter("testcase"):
                if case.find("failure") is not None or case.find("error") is not None:
                    f += 1
                elif case.find("skipped") is not None or case.get("result") == "skipped":
                    s += 1
                    skipped_names.append(f"{case.get('classname')}.{case.get('name')}")
                else:
                    p += 1
            print(f"  {build_dir}/{xml.stem}: {p} passed, {f} failed, {s} skipped")
            passed, failed, skipped = passed + p, failed + f, skipped + s
    for name in skipped_names:
        print(f"  skipped: {name}")
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
