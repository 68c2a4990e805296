//go:build windows

package main

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// requirePrivateFile checks that only the current user may open path: its
// DACL is protected (inherits nothing from the dir) and has one entry,
// allowing the user's SID full access. Windows has no 0600.
func requirePrivateFile(t *testing.T, path string) {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	require.NoError(t, err)
	control, _, err := sd.Control()
	require.NoError(t, err)
	require.NotZero(t, control&windows.SE_DACL_PROTECTED, "the DACL inherits nothing: %s", sd)
	dacl, _, err := sd.DACL()
	require.NoError(t, err)
	require.NotNil(t, dacl, "a nil DACL lets everyone in")
	require.Equal(t, uint16(1), dacl.AceCount, "%s", sd)
	var ace *windows.ACCESS_ALLOWED_ACE
	require.NoError(t, windows.GetAce(dacl, 0, &ace))
	require.Equal(t, uint8(windows.ACCESS_ALLOWED_ACE_TYPE), ace.Header.AceType)
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	require.NoError(t, err)
	sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
	require.True(t, sid.Equals(user.User.Sid), "the one entry is the user's: %s", sd)
	const fileAllAccess = 0x1f01ff // FILE_ALL_ACCESS, "FA" in SDDL
	require.Equal(t, uint32(fileAllAccess), uint32(ace.Mask)&fileAllAccess)
}
