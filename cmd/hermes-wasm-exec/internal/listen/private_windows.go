//go:build windows

package listen

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// createPrivate creates path (which must not exist) for writing, readable
// and writable by the current user only. Windows has no file modes (Go's
// 0600 there only clears the read-only attribute, and the file inherits
// its dir's ACL, which may let other users read it): the file gets a
// protected DACL, inheriting nothing, that grants the user alone full
// access.
func createPrivate(path string) (*os.File, error) {
	sd, err := PrivateSecurityDescriptor()
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(name, windows.GENERIC_WRITE, 0, sa, windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// PrivateSecurityDescriptor is the security descriptor of a file only the
// current user may open: a protected DACL with one entry, full access for
// the user's SID.
func PrivateSecurityDescriptor() (*windows.SECURITY_DESCRIPTOR, error) {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	return windows.SecurityDescriptorFromString("D:P(A;;FA;;;" + user.User.Sid.String() + ")")
}
