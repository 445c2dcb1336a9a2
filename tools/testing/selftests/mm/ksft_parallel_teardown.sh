#!/bin/sh -e
# SPDX-License-Identifier: GPL-2.0

./run_vmtests.sh -t parallel_teardown
